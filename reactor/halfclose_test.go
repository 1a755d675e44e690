package reactor

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestOutQueue: what goes in comes out in order across chunk boundaries,
// whatever the sizes pushed and sent, and the queue holds whole chunks only
// for what it still has (each chunk goes back once it is sent).
func TestOutQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q outQueue
	var want []byte
	next := byte(0)
	for step := 0; step < 2000; step++ {
		if rng.IntN(2) == 0 {
			p := make([]byte, rng.IntN(3*outChunkSize))
			for i := range p {
				p[i] = next
				next++
			}
			q.push(p)
			want = append(want, p...)
		} else if q.Len() > 0 {
			bufs := q.appendBufs(nil, 1+rng.IntN(8))
			var got []byte
			for _, b := range bufs {
				got = append(got, b...)
			}
			if !bytes.Equal(got, want[:len(got)]) {
				t.Fatalf("step %d: the queued bytes differ from those pushed", step)
			}
			n := rng.IntN(len(got) + 1)
			q.consume(n)
			want = want[n:]
		}
		if q.Len() != len(want) {
			t.Fatalf("step %d: Len %d, want %d", step, q.Len(), len(want))
		}
		if max := (len(want)/outChunkSize + 2) * outChunkSize; q.held() > max || (len(want) == 0 && q.held() != 0) {
			t.Fatalf("step %d: holds %d bytes for %d queued", step, q.held(), len(want))
		}
	}
	q.release()
	if q.Len() != 0 || q.held() != 0 {
		t.Fatalf("after release: Len %d, held %d", q.Len(), q.held())
	}
}

// TestOutQueueBufsCap: appendBufs stops at max slices.
func TestOutQueueBufsCap(t *testing.T) {
	var q outQueue
	q.push(make([]byte, 5*outChunkSize+7))
	if n := len(q.appendBufs(nil, 3)); n != 3 {
		t.Fatalf("%d slices, want 3", n)
	}
	if n := len(q.appendBufs(nil, 100)); n != 6 {
		t.Fatalf("%d slices, want 6", n)
	}
}
