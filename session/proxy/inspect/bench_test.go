package inspect

import (
	"strings"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
)

// BenchmarkWalk is the inspection's cost per clientbound frame, against
// count: what the relay of a session without a fallback does with the same
// bytes (mc.FrameCounter.Count). One op is a read of 32 frames of size
// bytes; plain is an uncompressed stream, small a compressed one whose
// frames are under the threshold (data length 0: no inflating), deflated
// one whose frames are over it (the ID is inflated, a few bytes of it).
func BenchmarkWalk(b *testing.B) {
	for _, tc := range []struct {
		name      string
		threshold int
		size      int
	}{{"plain", -1, 32}, {"small", 256, 32}, {"deflated", 256, 1024}} {
		var in []byte
		for i := range 32 {
			in = append(in, framed(tc.threshold, packet(int32(0x20+i%8), strings.Repeat("p", tc.size)))...)
		}
		b.Run("count/"+tc.name, func(b *testing.B) {
			var fc mc.FrameCounter
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for range b.N {
				fc.Count(in)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/frame")
		})
		b.Run("walk/"+tc.name, func(b *testing.B) {
			h := newHarness(b, 47, tc.threshold, &user{want: map[State][]int32{Play: {0x40, 0x3f}}})
			out := Out{Client: discard{}, S2C: &h.fs, Bytes: &h.n, Frames: &h.n}
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for range b.N {
				if n, err := h.l.walk(h.s, in, &out, &h.z); n != len(in) || err != nil {
					b.Fatal(n, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/frame")
		})
	}
}

type discard struct{}

func (discard) Write([]byte) error { return nil }
