package reframe

import (
	"bytes"
	stdzlib "compress/zlib"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
)

// frameAt encodes packet as one frame at threshold th (negative: off) with
// the standard library's zlib, an encoder independent of the Codec's.
func frameAt(t testing.TB, packet []byte, th int) []byte {
	t.Helper()
	var body []byte
	switch {
	case th < 0:
		body = packet
	case len(packet) < th:
		body = append([]byte{0}, packet...)
	default:
		var z bytes.Buffer
		zw := stdzlib.NewWriter(&z)
		_, _ = zw.Write(packet)
		_ = zw.Close()
		body = append(mc.AppendVarInt(nil, int32(len(packet))), z.Bytes()...)
	}
	return append(mc.AppendVarInt(nil, int32(len(body))), body...)
}

// decodeAt splits stream into frames at threshold th and returns their
// packets, inflated with the standard library; it fails the test on a
// frame that is not as th's side sends it (compressed under th, plain at
// or over it).
func decodeAt(t testing.TB, stream []byte, th int) [][]byte {
	t.Helper()
	var packets [][]byte
	for len(stream) > 0 {
		n, hl, err := mc.SplitFrame(stream, mc.MaxFrameLength)
		if err != nil || n == 0 {
			t.Fatalf("output stream: frame split: %v (n %d, %d bytes left)", err, n, len(stream))
		}
		body := stream[hl:n]
		stream = stream[n:]
		if th < 0 {
			packets = append(packets, body)
			continue
		}
		dl, k, err := mc.ReadVarInt(body)
		if err != nil || k == 0 {
			t.Fatalf("output frame data length: %v", err)
		}
		if dl == 0 {
			if len(body)-k >= th {
				t.Fatalf("plain packet of %d bytes at threshold %d", len(body)-k, th)
			}
			packets = append(packets, body[k:])
			continue
		}
		if int(dl) < th {
			t.Fatalf("compressed packet of %d bytes at threshold %d", dl, th)
		}
		zr, err := stdzlib.NewReader(bytes.NewReader(body[k:]))
		if err != nil {
			t.Fatalf("output zlib: %v", err)
		}
		p, err := io.ReadAll(zr)
		if err != nil || len(p) != int(dl) {
			t.Fatalf("output zlib: %v, %d bytes, declared %d", err, len(p), dl)
		}
		packets = append(packets, p)
	}
	return packets
}

// rawFrame returns body with its length prefix.
func rawFrame(body []byte) []byte { return append(mc.AppendVarInt(nil, int32(len(body))), body...) }

var testSizes = []int{1, 2, 63, 64, 65, 255, 256, 257, 1000, 1023, 1024, 1025, 5000, 40000}

func testPackets() [][]byte {
	ps := make([][]byte, 0, len(testSizes))
	for _, n := range testSizes {
		ps = append(ps, playPacket(n))
	}
	return ps
}

// convertAll feeds stream to c in reads of at most chunk bytes, keeping
// what Convert did not consume for the next read as a connection's input
// does, and returns all the output.
func convertAll(t testing.TB, c *Codec, stream []byte, chunk int, d Direction, dec *mc.CFB8) []byte {
	t.Helper()
	var in, all []byte
	for len(stream) > 0 || len(in) > 0 {
		k := min(chunk, len(stream))
		in = append(in, stream[:k]...)
		stream = stream[k:]
		for {
			out, n, err := c.Convert(in, d, dec)
			if err != nil {
				t.Fatalf("Convert: %v", err)
			}
			all = append(all, out...)
			in = in[n:]
			if len(out) < FlushAt {
				break
			}
		}
		if k == 0 && len(in) > 0 {
			t.Fatalf("%d bytes left over at the end of the stream", len(in))
		}
	}
	return all
}

func TestConvertPairs(t *testing.T) {
	pairs := []struct{ client, backend int }{
		{Off, 256}, {256, Off}, {64, 1024}, {1024, 64}, {0, Off}, {Off, 0}, {1, 2},
	}
	packets := testPackets()
	for _, pr := range pairs {
		p := NewPair(pr.client, pr.backend)
		for _, d := range []Direction{p.C2S, p.S2C} {
			t.Run(fmt.Sprintf("client%d/backend%d/%d-to-%d", pr.client, pr.backend, d.From, d.To), func(t *testing.T) {
				var stream []byte
				for _, pk := range packets {
					stream = append(stream, frameAt(t, pk, int(d.From))...)
				}
				for _, chunk := range []int{len(stream), 1 << 10, 7} {
					var c Codec
					got := decodeAt(t, convertAll(t, &c, stream, chunk, d, nil), int(d.To))
					if len(got) != len(packets) {
						t.Fatalf("chunk %d: %d packets out, want %d", chunk, len(got), len(packets))
					}
					for i := range got {
						if !bytes.Equal(got[i], packets[i]) {
							t.Fatalf("chunk %d: packet %d (%d bytes) differs: got %d bytes", chunk, i, len(packets[i]), len(got[i]))
						}
					}
				}
			})
		}
	}
}

// TestConvertEqualUnchanged: at equal thresholds Convert gives back the
// very bytes it read (the proxy does not call it then, but a Codec must
// not alter frames already in the other side's form).
func TestConvertEqualUnchanged(t *testing.T) {
	for _, th := range []int{Off, 0, 64, 256} {
		d := NewPair(th, th).C2S
		if !d.Same() {
			t.Fatalf("threshold %d both sides: not Same", th)
		}
		var stream []byte
		for _, pk := range testPackets() {
			stream = append(stream, frameAt(t, pk, th)...)
		}
		var c Codec
		if got := convertAll(t, &c, stream, 333, d, nil); !bytes.Equal(got, stream) {
			t.Fatalf("threshold %d: %d bytes out differ from the %d in", th, len(got), len(stream))
		}
	}
}

// TestConvertEncrypted: with an encrypted source, frames cut anywhere are
// decrypted once each, and what is left stays ciphertext for the next read.
func TestConvertEncrypted(t *testing.T) {
	secret := []byte("0123456789abcdef")
	enc, _, err := mc.NewConnCiphers(secret)
	if err != nil {
		t.Fatal(err)
	}
	_, dec, _ := mc.NewConnCiphers(secret)
	d := NewPair(64, Off).C2S
	packets := testPackets()
	var stream []byte
	for _, pk := range packets {
		stream = append(stream, frameAt(t, pk, int(d.From))...)
	}
	enc.XORKeyStream(stream, stream)
	var c Codec
	got := decodeAt(t, convertAll(t, &c, stream, 5, d, dec), int(d.To))
	if len(got) != len(packets) {
		t.Fatalf("%d packets out, want %d", len(got), len(packets))
	}
	for i := range got {
		if !bytes.Equal(got[i], packets[i]) {
			t.Fatalf("packet %d differs", i)
		}
	}
}

// TestConvertFlushes: a read of many frames is converted in batches of
// about FlushAt bytes.
func TestConvertFlushes(t *testing.T) {
	pk := playPacket(8 << 10)
	var stream []byte
	for range 64 {
		stream = append(stream, frameAt(t, pk, Off)...)
	}
	d := Direction{From: Off, To: 1 << 20, Limit: mc.MaxClientboundUncompressed} // plain to plain with the marker
	var c Codec
	out, n, err := c.Convert(stream, d, nil)
	if err != nil || n >= len(stream) || len(out) < FlushAt || len(out) > FlushAt+len(pk)+8 {
		t.Fatalf("Convert of %d bytes: %d out, %d consumed, %v: want one batch of about %d", len(stream), len(out), n, err, FlushAt)
	}
}

func TestConvertHostile(t *testing.T) {
	bomb := func(declared, inflated int) []byte {
		var z bytes.Buffer
		zw := stdzlib.NewWriter(&z)
		_, _ = zw.Write(make([]byte, inflated))
		_ = zw.Close()
		body := append(mc.AppendVarInt(nil, int32(declared)), z.Bytes()...)
		return append(mc.AppendVarInt(nil, int32(len(body))), body...)
	}
	truncated := bomb(1000, 1000)
	truncated = append(mc.AppendVarInt(nil, int32(len(truncated)-1-8)), truncated[1:len(truncated)-8]...)
	c2s := NewPair(64, Off).C2S // from a compressing client
	s2c := NewPair(Off, 64).S2C // from a compressing backend to a client without compression
	tests := []struct {
		name   string
		d      Direction
		in     []byte
		reason string
		tooBig bool
		alloc  uint64 // the most converting it may allocate; 0: 1 MiB
	}{
		{"negative data length", c2s, rawFrame([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}), mc.ReasonBadCompression, false, 0},
		{"data length past 8 MiB", c2s, rawFrame(append(mc.AppendVarInt(nil, 8<<20+1), 0x78, 0x9c)), mc.ReasonInflateTooLarge, false, 0},
		{"serverbound past 2^21", c2s, bomb(1<<21+1, 10), mc.ReasonInflateTooLarge, false, 0},
		{"clientbound past 8 MiB", s2c, bomb(8<<20+1, 10), mc.ReasonInflateTooLarge, false, 0},
		// Inflated to its declared 8 MiB and no further, the buffer doubling
		// on the way.
		{"clientbound at 8 MiB", s2c, bomb(8<<20, 8<<20+1), mc.ReasonBadInflate, false, 4 * 8 << 20},
		{"bomb past its declared size", c2s, bomb(100, 4<<20), mc.ReasonBadInflate, false, 0},
		{"short of its declared size", c2s, bomb(5000, 100), mc.ReasonBadInflate, false, 0},
		{"compressed under the threshold", c2s, bomb(10, 10), mc.ReasonBadCompression, false, 0},
		{"truncated zlib", c2s, truncated, mc.ReasonBadInflate, false, 0},
		{"not zlib", c2s, rawFrame([]byte{100, 1, 2, 3, 4}), mc.ReasonBadInflate, false, 0},
		{"frame length of 4 bytes", c2s, []byte{0xff, 0xff, 0xff, 0x7f}, mc.ReasonVarIntTooLong, false, 0},
		{"too large for a plain frame", s2c, bomb(3<<20, 3<<20), "", true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Codec
			good := frameAt(t, []byte{0x01, 0x02}, int(tc.d.From))
			in := append(append([]byte(nil), good...), tc.in...)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			out, n, err := c.Convert(in, tc.d, nil)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatalf("no error (%d bytes out)", len(out))
			}
			if tc.tooBig != errors.Is(err, ErrTooLarge) || (!tc.tooBig && mc.ErrorReason(err) != tc.reason) {
				t.Fatalf("error %v (reason %s), want reason %s", err, mc.ErrorReason(err), tc.reason)
			}
			if n != len(in) {
				t.Fatalf("consumed %d of %d", n, len(in))
			}
			if want := frameAt(t, []byte{0x01, 0x02}, int(tc.d.To)); !bytes.Equal(out, want) {
				t.Fatalf("out %x, want the good frame before the bad one, %x", out, want)
			}
			// The bombs inflate to 4 MiB: the buffers must not follow them.
			if tc.alloc == 0 {
				tc.alloc = 1 << 20
			}
			if grown := after.TotalAlloc - before.TotalAlloc; !tc.tooBig && grown > tc.alloc {
				t.Fatalf("converting %d bytes allocated %d", len(in), grown)
			}
		})
	}
}
