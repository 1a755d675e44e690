package reframe

import (
	"bytes"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
)

// FuzzConvert feeds hostile streams (bad data lengths, inflate bombs,
// lengths past the limits, truncated or corrupt zlib, cut frames) to a
// Codec at both thresholds' kinds: it must not panic, consume more than it
// was given, or grow its buffers past the limits; what it converts without
// error must decode at the other side's threshold to the packets a
// reference decoder reads from the input.
func FuzzConvert(f *testing.F) {
	f.Add(frameAt(f, playPacket(300), 64), int16(64), int16(-1), false)
	f.Add(frameAt(f, playPacket(30), -1), int16(-1), int16(16), false)
	f.Add(append(frameAt(f, playPacket(2000), 256), 0x85), int16(256), int16(1024), true)
	f.Add([]byte{6, 0x80, 0x80, 0x80, 0x04, 0x78, 0x9c}, int16(0), int16(-1), false)
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f}, int16(0), int16(-1), true)
	f.Fuzz(func(t *testing.T, in []byte, from, to int16, clientbound bool) {
		d := Direction{From: int32(max(from, Off)), To: int32(max(to, Off)), Limit: mc.MaxServerboundUncompressed}
		if clientbound {
			d.Limit = mc.MaxClientboundUncompressed
		}
		orig := append([]byte(nil), in...)
		var c Codec
		out, n, err := c.Convert(in, d, nil)
		if n < 0 || n > len(in) {
			t.Fatalf("consumed %d of %d", n, len(in))
		}
		// The same stream encrypted converts to the same frames, and the
		// decrypter ends at the first byte not consumed.
		enc, dec, _ := mc.NewConnCiphers(fuzzSecret)
		_, ref, _ := mc.NewConnCiphers(fuzzSecret)
		sealed := append([]byte(nil), orig...)
		enc.XORKeyStream(sealed, sealed)
		sealedCopy := append([]byte(nil), sealed...)
		var ce Codec
		outE, nE, errE := ce.Convert(sealed, d, dec)
		if (errE == nil) != (err == nil) || !bytes.Equal(outE, out) || (err == nil && nE != n) {
			t.Fatalf("encrypted: %d out, %d consumed, %v; clear: %d out, %d consumed, %v", len(outE), nE, errE, len(out), n, err)
		}
		if err != nil {
			return
		}
		ref.XORKeyStream(make([]byte, n), sealedCopy[:n])
		if !bytes.Equal(sealed[n:], sealedCopy[n:]) {
			t.Fatalf("the bytes after %d were changed", n)
		}
		if dec.Register() != ref.Register() {
			t.Fatalf("decrypter does not stand at byte %d", n)
		}
		if len(out) < FlushAt && n < len(in) {
			// What is left must be a cut frame, not one Convert skipped.
			if fl, _, serr := mc.SplitFrame(in[n:], mc.MaxFrameLength); serr == nil && fl != 0 {
				t.Fatalf("a whole frame of %d bytes left at %d", fl, n)
			}
		}
		want := referencePackets(t, orig[:n], int(d.From))
		if want == nil {
			t.Fatalf("converted without error what the reference decoder refuses")
		}
		got := decodeAt(t, out, int(d.To))
		if len(got) != len(want) {
			t.Fatalf("%d packets out, %d in", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("packet %d differs", i)
			}
		}
	})
}

var fuzzSecret = []byte("fuzz-secret-16by")

// referencePackets decodes stream at threshold th with the standard
// library's zlib, dropping empty frames as Convert does; nil when a frame
// is malformed.
func referencePackets(t *testing.T, stream []byte, th int) [][]byte {
	packets := [][]byte{}
	for len(stream) > 0 {
		n, hl, err := mc.SplitFrame(stream, mc.MaxFrameLength)
		if err != nil || n == 0 {
			return nil
		}
		body := stream[hl:n]
		stream = stream[n:]
		if len(body) == 0 {
			continue
		}
		if th < 0 {
			packets = append(packets, body)
			continue
		}
		var c Codec
		p, err := c.zlib.Inflate(body, th, mc.MaxClientboundUncompressed)
		if err != nil {
			return nil
		}
		packets = append(packets, append([]byte(nil), p...))
	}
	return packets
}
