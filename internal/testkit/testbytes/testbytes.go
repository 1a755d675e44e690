// Package testbytes makes and compares test payloads whose bytes differ
// from frame to frame, so that a frame written twice, dropped or reordered
// changes the output.
package testbytes

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/tidegate/tidegate/protocol/mc"
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

// MCFrames joins Minecraft packets (ID and data) as frames in the framing
// of threshold: plain when -1, else compressed (mc.Compressor.AppendFrame).
func MCFrames(threshold int, packets ...[]byte) []byte {
	var k mc.Compressor
	var out []byte
	for _, p := range packets {
		out = k.AppendFrame(out, p, threshold)
	}
	return out
}
