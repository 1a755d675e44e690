package move

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
)

// frame returns packet framed at threshold.
func frame(packet []byte, threshold int) []byte {
	var k mc.Compressor
	return k.AppendFrame(nil, packet, threshold)
}

// body returns the frame body of a whole frame.
func body(t testing.TB, f []byte) []byte {
	t.Helper()
	n, hl, err := mc.SplitFrame(f, mc.MaxFrameLength)
	if err != nil || n != len(f) {
		t.Fatalf("frame % x: %d bytes, %v", f, n, err)
	}
	return f[hl:n]
}

// TestPacketID reads IDs plain, compressed below and past the threshold,
// and refuses what is not a packet.
func TestPacketID(t *testing.T) {
	var k mc.Compressor
	ack := mc.AppendVarInt(nil, 0x0b)
	big := append(mc.AppendVarInt(nil, 0x0b), bytes.Repeat([]byte{1}, 200)...)
	for _, tc := range []struct {
		name      string
		body      []byte
		threshold int
		want      int32
		err       bool
	}{
		{"plain", body(t, frame(ack, -1)), -1, 0x0b, false},
		{"compressed framing, small", body(t, frame(ack, 64)), 64, 0x0b, false},
		{"deflated at threshold 0", body(t, frame(ack, 0)), 0, 0x0b, false},
		{"deflated, too large to look at", body(t, frame(big, 64)), 64, Other, false},
		{"empty", nil, -1, 0, true},
		{"bad varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, -1, 0, true},
		{"bad zlib", []byte{5, 1, 2, 3}, 0, 0, true},
		{"declared below threshold", append([]byte{3}, frame(ack, 0)[2:]...), 64, 0, true},
	} {
		got, err := PacketID(tc.body, tc.threshold, &k)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("%s: %d, %v; want %d, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestToBoundary: the end of the frame in flight is found across reads,
// through a length prefix cut in two.
func TestToBoundary(t *testing.T) {
	stream := append(frame(bytes.Repeat([]byte{7}, 300), -1), frame([]byte{1, 2}, -1)...) // a 2-byte prefix
	for cut := 0; cut <= len(stream); cut++ {
		var fc mc.FrameCounter
		fc.Count(stream[:cut])
		k, done := toBoundary(&fc, stream[cut:])
		end := 0 // where the frame in flight at cut ends
		for _, e := range []int{0, 302, len(stream)} {
			if e >= cut {
				end = e
				break
			}
		}
		if !done || cut+k != end {
			t.Errorf("cut %d: %d bytes to the boundary (done %v), want %d", cut, k, done, end-cut)
		}
	}
	var fc mc.FrameCounter
	fc.Count(stream[:10])
	if k, done := toBoundary(&fc, stream[10:20]); done || k != 10 {
		t.Errorf("a frame going on past the input: %d, %v", k, done)
	}
}

// TestWhy names what a player reads for each failure.
func TestWhy(t *testing.T) {
	if got := Why(errors.New("x")); got != "the server did not take you in" {
		t.Errorf("Why = %q", got)
	}
}

// TestPacketIDAllocs: reading the ID of a frame in the compressed framing
// allocates nothing, short of inflating one (below a threshold of 64
// bytes only, where the standard library's zlib reader allocates its
// checksum on each reset), or large ones, which are not inflated.
func TestPacketIDAllocs(t *testing.T) {
	var k mc.Compressor
	small := body(t, frame(mc.AppendVarInt(nil, 0x0b), 256))
	large := body(t, frame(append(mc.AppendVarInt(nil, 0x0b), bytes.Repeat([]byte{1}, 300)...), 256))
	if n := testing.AllocsPerRun(100, func() { _, _ = PacketID(small, 256, &k); _, _ = PacketID(large, 256, &k) }); n != 0 {
		t.Errorf("%v allocations per PacketID, want 0", n)
	}
}

// FuzzPacketID: no input panics, and every ID read from a plain body is
// the body's first VarInt.
func FuzzPacketID(f *testing.F) {
	f.Add([]byte{0x0b}, -1)
	f.Add(frame(mc.AppendVarInt(nil, 0x0b), 0)[1:], 0)
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80}, 64)
	var k mc.Compressor
	f.Fuzz(func(t *testing.T, b []byte, threshold int) {
		threshold = max(min(threshold, 1<<20), -1)
		id, err := PacketID(b, threshold, &k)
		if err == nil && threshold < 0 {
			if want, _, _ := mc.ReadVarInt(b); want != id {
				t.Fatalf("id %d, want %d", id, want)
			}
		}
		var fc mc.FrameCounter
		fc.Count(b[:len(b)/2])
		if n, _ := toBoundary(&fc, b[len(b)/2:]); n < 0 || n > len(b)-len(b)/2 {
			t.Fatalf("toBoundary took %d of %d bytes", n, len(b)-len(b)/2)
		}
	})
}
