package proxy

import (
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
)

// BenchmarkFrameScanner scans a burst32 read: 32 frames of 32 bytes.
func BenchmarkFrameScanner(b *testing.B) {
	var burst []byte
	for range 32 {
		burst = append(burst, mc.AppendVarInt(nil, 31)...)
		burst = append(burst, make([]byte, 31)...)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(burst)))
	var fs frameScanner
	for b.Loop() {
		if fs.scan(burst) != 32 {
			b.Fatal("miscounted")
		}
	}
}
