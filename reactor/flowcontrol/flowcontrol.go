// Package flowcontrol holds the defaults and the rule of the reactor's flow
// control per connection (its output watermarks) and of the linger on
// close. The reactor applies them; the configurations that set them (the
// proxy's limits) take their defaults and checks from here, without
// importing the reactor's runtime.
package flowcontrol

import "time"

// Defaults of the watermarks and the linger.
const (
	// DefaultHighWatermark is the output a connection may have queued
	// before its peer is no longer read.
	DefaultHighWatermark = 2 << 20
	// DefaultLowWatermark is the queued output under which the peer is
	// read again.
	DefaultLowWatermark = 1 << 20
	// DefaultLinger lets a reader at 70 KiB/s take a full
	// DefaultHighWatermark (2 MiB) of queued output before a close gives
	// up on it.
	DefaultLinger = 30 * time.Second
)

// WatermarkFault is the part of the watermark rule a pair breaks.
type WatermarkFault uint8

// Watermark faults, in the order CheckWatermarks tests them.
const (
	WatermarksValid          WatermarkFault = iota
	HighWatermarkNotPositive                // high <= 0
	LowWatermarkNegative                    // low < 0
	LowWatermarkAboveHigh                   // low > high
)

// CheckWatermarks applies the watermark rule, 0 <= low <= high and high >
// 0, and returns the first part the pair breaks; WatermarksValid when it
// breaks none.
func CheckWatermarks(low, high int) WatermarkFault {
	switch {
	case high <= 0:
		return HighWatermarkNotPositive
	case low < 0:
		return LowWatermarkNegative
	case low > high:
		return LowWatermarkAboveHigh
	}
	return WatermarksValid
}
