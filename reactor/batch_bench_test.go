//go:build linux

package reactor

import (
	"bytes"
	"testing"
)

// BenchmarkBatchWriteToConn writes a batch of 60 mixed frames to a real
// loopback connection through Conn.WriteBatch on the connection's loop, and
// reads it back on the client's blocking socket, so that allocations per op
// show on the whole handler path.
func BenchmarkBatchWriteToConn(b *testing.B) {
	c, fd := loopConnPair(b)
	frames, want := mixedFrames(60, 9)
	got := make([]byte, len(want))
	var failure error
	b.ReportAllocs()
	b.SetBytes(int64(len(want)))
	onLoop(b, c, func() {
		b.ResetTimer()
		for range b.N {
			batch := c.Loop().Batch()
			for _, f := range frames {
				batch.Add(f)
			}
			if err := c.WriteBatch(batch); err != nil {
				failure = err
				break
			}
			if err := readFull(fd, got); err != nil {
				failure = err
				break
			}
		}
		b.StopTimer()
	})
	if failure != nil {
		b.Fatal(failure)
	}
	if !bytes.Equal(got, want) {
		b.Fatal("bytes read differ from the batch")
	}
}
