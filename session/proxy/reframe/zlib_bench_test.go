package reframe

import (
	"bytes"
	stdzlib "compress/zlib"
	"fmt"
	"io"
	"testing"

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
