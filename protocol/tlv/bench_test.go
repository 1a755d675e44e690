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
