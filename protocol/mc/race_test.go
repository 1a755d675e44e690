//go:build race

package mc

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// code that pools (regexp's matchers) allocates now and then.
const raceEnabled = true
