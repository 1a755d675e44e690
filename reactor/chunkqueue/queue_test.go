package chunkqueue

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestQueue: what goes in comes out in order across chunk boundaries,
// whatever the sizes pushed and sent, and the queue holds whole chunks only
// for what it still has (each chunk goes back once it is sent).
func TestQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q Queue
	var want []byte
	next := byte(0)
	for step := 0; step < 2000; step++ {
		if rng.IntN(2) == 0 {
			p := make([]byte, rng.IntN(3*ChunkSize))
			for i := range p {
				p[i] = next
				next++
			}
			q.Push(p)
			want = append(want, p...)
		} else if q.Len() > 0 {
			bufs := q.AppendBufs(nil, 1+rng.IntN(8))
			var got []byte
			for _, b := range bufs {
				got = append(got, b...)
			}
			if !bytes.Equal(got, want[:len(got)]) {
				t.Fatalf("step %d: the queued bytes differ from those pushed", step)
			}
			n := rng.IntN(len(got) + 1)
			q.Consume(n)
			want = want[n:]
		}
		if q.Len() != len(want) {
			t.Fatalf("step %d: Len %d, want %d", step, q.Len(), len(want))
		}
		if max := (len(want)/ChunkSize + 2) * ChunkSize; q.Held() > max || (len(want) == 0 && q.Held() != 0) {
			t.Fatalf("step %d: holds %d bytes for %d queued", step, q.Held(), len(want))
		}
	}
	q.Release()
	if q.Len() != 0 || q.Held() != 0 {
		t.Fatalf("after release: Len %d, held %d", q.Len(), q.Held())
	}
}

// TestQueueBufsCap: AppendBufs stops at max slices.
func TestQueueBufsCap(t *testing.T) {
	var q Queue
	q.Push(make([]byte, 5*ChunkSize+7))
	if n := len(q.AppendBufs(nil, 3)); n != 3 {
		t.Fatalf("%d slices, want 3", n)
	}
	if n := len(q.AppendBufs(nil, 100)); n != 6 {
		t.Fatalf("%d slices, want 6", n)
	}
}
