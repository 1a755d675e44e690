//go:build !race

package mc

// raceEnabled: see race_test.go.
const raceEnabled = false
