// Package testbytes makes and compares test payloads whose bytes differ
// from frame to frame, so that a frame written twice, dropped or reordered
// changes the output.
package testbytes

import (
	"encoding/binary"
	"math/rand/v2"
)

// Patterned returns n pseudo-random bytes determined by seed, with its
// capacity cut to n so that an append cannot write past them.
func Patterned(n int, seed uint64) []byte {
	p := make([]byte, n+7)
	r := rand.NewPCG(seed, 0x5eed)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(p[i:], r.Uint64())
	}
	return p[:n:n]
}

// FirstDiff returns the index of the first byte where a and b differ, or
// the shorter length when one is a prefix of the other.
func FirstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
