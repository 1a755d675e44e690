package drainwatch

import "testing"

// TestWritableQueue: the handoff keeps order, and an overflow is reported
// rather than dropped silently.
func TestWritableQueue(t *testing.T) {
	var q queue
	for round := 0; round < 3; round++ {
		for i := 0; i < len(q.fds); i++ {
			q.push(int32(i))
		}
		if q.lost.Load() {
			t.Fatal("a full queue that did not overflow reported a loss")
		}
		q.push(-1)
		if !q.lost.Swap(false) {
			t.Fatal("overflow not reported")
		}
		for i := 0; i < len(q.fds); i++ {
			fd, ok := q.pop()
			if !ok || fd != int32(i) {
				t.Fatalf("round %d pop %d: got %d, %v", round, i, fd, ok)
			}
		}
		if _, ok := q.pop(); ok {
			t.Fatal("pop from an empty queue")
		}
	}
}
