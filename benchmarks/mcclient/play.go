package mcclient

import "errors"

// PlayPacketID is the packet ID of the benchmark's PLAY packets (as in
// MoonBridge's benchmark).
const PlayPacketID = 0x03

// PatternPeriod is the period of the filler pattern; a prime, so filler
// offsets of neighbouring sequence numbers and connections differ.
const PatternPeriod = 251

// FillerPattern returns the filler pattern for fillers of up to n bytes:
// PatternPeriod + n bytes, any n of them from an offset below the period.
func FillerPattern(n int) []byte {
	pattern := make([]byte, PatternPeriod+n)
	for i := range pattern {
		pattern[i] = byte((i%PatternPeriod)*97 + 13)
	}
	return pattern
}

// FirstDifference returns the first index at which a and b differ, within
// the shorter of the two.
func FirstDifference(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// ErrFramingLost ends a connection whose stream of replies cannot be split
// into frames any more.
var ErrFramingLost = errors.New("framing lost")
