package proxy

import (
	"testing"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/config"
)

func TestFrameScanner(t *testing.T) {
	frame := func(n int) []byte { return append(mc.AppendVarInt(nil, int32(n)), make([]byte, n)...) }
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
			var fs frameScanner
			n := 0
			for i := range tc.stream {
				n += fs.scan(tc.stream[i : i+1])
			}
			var whole frameScanner
			if m := whole.scan(tc.stream); m != n || n != tc.frames || fs.broken != tc.broken {
				t.Fatalf("bytewise %d, whole %d, want %d frames; broken %v want %v", n, m, tc.frames, fs.broken, tc.broken)
			}
		})
	}
}

// FuzzFrameScanner checks the scanner against mc.SplitFrame on any input,
// split at a fuzzer-chosen point.
func FuzzFrameScanner(f *testing.F) {
	f.Add([]byte{0x01, 0x00, 0x00, 0x02, 0xaa, 0xbb}, uint8(3))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f}, uint8(1))
	f.Add(append(mc.AppendVarInt(nil, 300), make([]byte, 300)...), uint8(200))
	f.Add(append(append(mc.AppendVarInt(nil, 255), make([]byte, 255)...), 0x00, 0x01), uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, cut uint8) {
		var fs frameScanner
		k := min(int(cut), len(stream))
		got := fs.scan(stream[:k]) + fs.scan(stream[k:])
		want, rest := 0, stream
		for len(rest) > 0 {
			n, _, err := mc.SplitFrame(rest, mc.MaxFrameLength)
			if err != nil {
				if !fs.broken {
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
		if fs.broken || got != want {
			t.Fatalf("scanner counted %d (broken %v), SplitFrame %d", got, fs.broken, want)
		}
	})
}

func TestPickWeightsAndHealth(t *testing.T) {
	g := &group{backends: []*backend{{addr: "a", weight: 1, backendHealth: &backendHealth{}}, {addr: "b", weight: 3, backendHealth: &backendHealth{}}}}
	rnd := uint64(42)
	counts := map[string]int{}
	for i := 0; i < 40000; i++ {
		b, probe := g.pick(&rnd, 0, 0, 1)
		if probe {
			t.Fatal("a probe picked while every backend is up")
		}
		counts[b.addr]++
	}
	if r := float64(counts["b"]) / float64(counts["a"]); r < 2.7 || r > 3.3 {
		t.Fatalf("weights 1:3 gave %v", counts)
	}
	h := config.ProbeConfig{Failures: 2, Cooldown: time.Second}
	now := nowUnix()
	g.backends[1].MarkFailed(h, now, false)
	if !g.backends[1].MarkFailed(h, now, false) {
		t.Fatal("second failure did not mark the backend down")
	}
	for i := 0; i < 100; i++ {
		if b, _ := g.pick(&rnd, 0, now, 1); b.addr != "a" {
			t.Fatalf("picked %s while it is down", b.addr)
		}
	}
	g.backends[0].MarkFailed(h, now, false)
	g.backends[0].MarkFailed(h, now, false)
	if b, _ := g.pick(&rnd, 0, now+int64(time.Second)-1, 1); b != nil {
		t.Fatalf("with every backend in its cooldown, pick chose %s", b.addr)
	}
}
