package tlv_test

import (
	"testing"

	"github.com/tidegate/tidegate/protocol/tlv"
)

func BenchmarkDecode(b *testing.B) {
	f := tlv.DefaultFormat
	frame := f.AppendFrame(nil, tlv.Header{Type: 7, KeepAlive: true}, make([]byte, 128))
	b.ReportAllocs()
	b.SetBytes(int64(f.HeaderLen()))
	var total int
	for b.Loop() {
		_, n, err := f.Decode(frame)
		if err != nil {
			b.Fatal(err)
		}
		total += n
	}
	if total == 0 {
		b.Fatal("nothing decoded")
	}
}

func BenchmarkAppendFrame(b *testing.B) {
	f := tlv.DefaultFormat
	body := make([]byte, 128)
	dst := make([]byte, 0, f.HeaderLen()+len(body))
	b.ReportAllocs()
	b.SetBytes(int64(f.HeaderLen() + len(body)))
	for b.Loop() {
		dst = f.AppendFrame(dst[:0], tlv.Header{Type: 7, KeepAlive: true}, body)
	}
	if len(dst) != f.HeaderLen()+len(body) {
		b.Fatal("bad frame length")
	}
}

// BenchmarkDecodeRequests walks 64 pipelined 16-byte requests, as a server
// does with one read, with Format.Decode and CheckRequest and with a
// Decoder; ns/request is per frame.
func BenchmarkDecodeRequests(b *testing.B) {
	f := tlv.DefaultFormat
	var in []byte
	const frames = 64
	for i := range frames {
		in = f.AppendFrame(in, tlv.Header{Type: uint16(i % 127), KeepAlive: true}, make([]byte, 16))
	}
	walk := func(b *testing.B, decode func([]byte) (tlv.Header, int, error)) {
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			k := 0
			for off := 0; off < len(in); k++ {
				_, n, err := decode(in[off:])
				if err != nil || n == 0 {
					b.Fatal(n, err)
				}
				off += n
			}
			if k != frames {
				b.Fatal(k)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*frames), "ns/request")
	}
	b.Run("Format", func(b *testing.B) {
		walk(b, func(p []byte) (tlv.Header, int, error) {
			h, n, err := f.Decode(p)
			if err == nil {
				err = f.CheckRequest(h)
			}
			return h, n, err
		})
	})
	d, _ := f.Decoder()
	b.Run("Decoder", func(b *testing.B) { walk(b, d.DecodeRequest) })
}

// BenchmarkPutHeader writes the headers of 64 frames, as a server does for
// the responses to one read, with Format.PutHeader and with an Encoder;
// ns/header is per header.
func BenchmarkPutHeader(b *testing.B) {
	f := tlv.DefaultFormat
	const frames = 64
	hl := f.HeaderLen()
	buf := make([]byte, frames*hl)
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*frames), "ns/header")
	}
	b.Run("Format", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range frames {
				f.PutHeader(buf[i*hl:], tlv.Header{Type: uint16(i % 127), KeepAlive: true, Length: 16 + i})
			}
		}
		report(b)
	})
	b.Run("Encoder", func(b *testing.B) {
		e, err := f.Encoder()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			for i := range frames {
				if err := e.PutHeader(buf[i*hl:], tlv.Header{Type: uint16(i % 127), KeepAlive: true, Length: 16 + i}); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b)
	})
}
