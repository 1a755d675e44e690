package mc

import "testing"

func TestFrameCounter(t *testing.T) {
	frame := func(n int) []byte { return append(AppendVarInt(nil, int32(n)), make([]byte, n)...) }
	cases := []struct {
		name   string
		stream []byte
		frames int
		broken bool
	}{
		{"empty", nil, 0, false},
		{"one", frame(5), 1, false},
		{"zero length frames count", append(frame(0), frame(0)...), 2, false},
		{"two-byte length", append(frame(300), frame(1)...), 2, false},
		{"two-byte lengths with every low bit", append(append(frame(255), frame(254)...), frame(16383)...), 3, false},
		{"three-byte length", frame(70000), 1, false},
		{"three-byte lengths with every low bit", append(frame(2097151), frame(16384)...), 2, false},
		{"small frames after a large one", append(append(frame(40000), frame(3)...), frame(0)...), 3, false},
		{"partial body", frame(10)[:5], 0, false},
		{"four-byte length breaks", []byte{0x80, 0x80, 0x80, 0x01}, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Feed one byte at a time: the count must not depend on how reads split the stream.
			var fs FrameCounter
			n := 0
			for i := range tc.stream {
				n += fs.Count(tc.stream[i : i+1])
			}
			var whole FrameCounter
			if m := whole.Count(tc.stream); m != n || n != tc.frames || fs.Broken() != tc.broken {
				t.Fatalf("bytewise %d, whole %d, want %d frames; broken %v want %v", n, m, tc.frames, fs.Broken(), tc.broken)
			}
		})
	}
}

// FuzzFrameCounter checks the counter against SplitFrame on any input,
// split at a fuzzer-chosen point.
func FuzzFrameCounter(f *testing.F) {
	f.Add([]byte{0x01, 0x00, 0x00, 0x02, 0xaa, 0xbb}, uint8(3))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f}, uint8(1))
	f.Add(append(AppendVarInt(nil, 300), make([]byte, 300)...), uint8(200))
	f.Add(append(append(AppendVarInt(nil, 255), make([]byte, 255)...), 0x00, 0x01), uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, cut uint8) {
		var fs FrameCounter
		k := min(int(cut), len(stream))
		got := fs.Count(stream[:k]) + fs.Count(stream[k:])
		want, rest := 0, stream
		for len(rest) > 0 {
			n, _, err := SplitFrame(rest, MaxFrameLength)
			if err != nil {
				if !fs.Broken() {
					t.Fatalf("SplitFrame failed (%v) but the scanner did not break", err)
				}
				return
			}
			if n == 0 {
				break
			}
			want++
			rest = rest[n:]
		}
		if fs.Broken() || got != want {
			t.Fatalf("scanner counted %d (broken %v), SplitFrame %d", got, fs.Broken(), want)
		}
	})
}

// BenchmarkFrameCounter scans a burst32 read: 32 frames of 32 bytes.
func BenchmarkFrameCounter(b *testing.B) {
	var burst []byte
	for range 32 {
		burst = append(burst, AppendVarInt(nil, 31)...)
		burst = append(burst, make([]byte, 31)...)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(burst)))
	var fs FrameCounter
	for b.Loop() {
		if fs.Count(burst) != 32 {
			b.Fatal("miscounted")
		}
	}
}
