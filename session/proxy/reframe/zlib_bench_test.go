package reframe

import (
	"bytes"
	stdzlib "compress/zlib"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"

	kpzlib "github.com/klauspost/compress/zlib"
)

// playPacket returns a packet of n bytes shaped like play traffic: a
// packet ID, then varints, small coordinates, a short name and runs of
// repeated block states, so that it deflates as real frames do (neither
// random nor all zeros). It is deterministic.
func playPacket(n int) []byte {
	p := make([]byte, 0, n)
	p = append(p, 0x2c)
	x := uint32(0x9e3779b9)
	for len(p) < n {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		switch x % 4 {
		case 0: // a run of one block state
			run := int(x>>8%24) + 4
			for i := 0; i < run; i++ {
				p = append(p, byte(x>>16)&0x3f)
			}
		case 1: // coordinates
			p = append(p, 0, 0, byte(x>>8), byte(x>>16), 0x40, 0x5e, byte(x>>24), 0)
		case 2:
			p = append(p, "minecraft:stone"...)
		default:
			p = append(p, byte(x), byte(x>>8))
		}
	}
	return p[:n]
}

// zlibImpl is one zlib implementation's reusable writer and reader.
type zlibImpl struct {
	name      string
	newWriter func(w io.Writer, level int) (io.WriteCloser, func(io.Writer))
	newReader func(r io.Reader) (io.ReadCloser, error)
}

var zlibImpls = []zlibImpl{
	{"stdlib", func(w io.Writer, level int) (io.WriteCloser, func(io.Writer)) {
		zw, _ := stdzlib.NewWriterLevel(w, level)
		return zw, zw.Reset
	}, stdzlib.NewReader},
	{"klauspost", func(w io.Writer, level int) (io.WriteCloser, func(io.Writer)) {
		zw, _ := kpzlib.NewWriterLevel(w, level)
		return zw, zw.Reset
	}, kpzlib.NewReader},
}

func init() {
	// Alternated order for the results: the second implementation first.
	if os.Getenv("REFRAME_ZLIB_REVERSE") != "" {
		slices.Reverse(zlibImpls)
	}
}

var playSizes = []int{64, 256, 1024, 4096, 32 << 10}

// BenchmarkZlibDeflate deflates one play packet per op with a writer reset,
// not made, per frame, at vanilla's level (6, Java's default) and at 1.
func BenchmarkZlibDeflate(b *testing.B) {
	for _, level := range []int{6, 1} {
		for _, n := range playSizes {
			pkt := playPacket(n)
			for _, impl := range zlibImpls {
				b.Run(fmt.Sprintf("level%d/%d/%s", level, n, impl.name), func(b *testing.B) {
					var out bytes.Buffer
					out.Grow(2 * n)
					zw, reset := impl.newWriter(&out, level)
					b.ReportAllocs()
					b.SetBytes(int64(n))
					for b.Loop() {
						out.Reset()
						reset(&out)
						_, _ = zw.Write(pkt)
						_ = zw.Close()
					}
					b.ReportMetric(float64(out.Len())/float64(n), "ratio")
				})
			}
		}
	}
}

// BenchmarkZlibInflate inflates one deflated play packet per op into a
// buffer of its size, with a reader reset per frame.
func BenchmarkZlibInflate(b *testing.B) {
	for _, n := range playSizes {
		pkt := playPacket(n)
		var z bytes.Buffer
		zw := stdzlib.NewWriter(&z)
		_, _ = zw.Write(pkt)
		_ = zw.Close()
		for _, impl := range zlibImpls {
			b.Run(fmt.Sprintf("%d/%s", n, impl.name), func(b *testing.B) {
				src := bytes.NewReader(z.Bytes())
				zr, err := impl.newReader(src)
				if err != nil {
					b.Fatal(err)
				}
				buf := make([]byte, n)
				b.ReportAllocs()
				b.SetBytes(int64(n))
				for b.Loop() {
					src.Reset(z.Bytes())
					if err := zr.(stdzlib.Resetter).Reset(src, nil); err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(zr, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkConvert converts one play frame per op (ns/op is ns/frame) in
// each of the Codec's paths, against passthrough, the copy a frame that
// needs no re-framing costs:
//
//   - inflate: a deflated frame to a side without compression;
//   - deflate: a plain frame to a side compressing under its size;
//   - checked: a deflated frame to a side that takes it as it is (it is
//     inflated to check it, and copied);
//   - marker: under both thresholds, the data length 0 marker dropped.
func BenchmarkConvert(b *testing.B) {
	for _, n := range playSizes {
		pkt := playPacket(n)
		for _, tc := range []struct {
			name     string
			from, to int
		}{{"passthrough", -1, -1}, {"inflate", 0, -1}, {"deflate", -1, 0}, {"checked", 0, 16}, {"marker", 1 << 20, -1}} {
			b.Run(fmt.Sprintf("%d/%s", n, tc.name), func(b *testing.B) {
				frame := frameAt(b, pkt, tc.from)
				d := Direction{From: int32(tc.from), To: int32(tc.to), Limit: mc.MaxClientboundUncompressed}
				var c Codec
				var copied []byte
				b.ReportAllocs()
				b.SetBytes(int64(n))
				for b.Loop() {
					if tc.name == "passthrough" {
						copied = append(copied[:0], frame...)
						continue
					}
					if _, _, err := c.Convert(frame, d, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
