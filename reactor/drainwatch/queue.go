package drainwatch

import "sync/atomic"

// queue hands descriptors from the watcher goroutine (the only producer)
// to the loop (the only consumer) without a lock. When it is full the
// watcher sets lost, and the loop must check every socket it waits for.
type queue struct {
	head atomic.Uint32 // next slot the loop reads
	tail atomic.Uint32 // next slot the watcher writes
	lost atomic.Bool
	fds  [256]int32
}

func (q *queue) push(fd int32) {
	t := q.tail.Load()
	if t-q.head.Load() == uint32(len(q.fds)) {
		q.lost.Store(true)
		return
	}
	q.fds[t%uint32(len(q.fds))] = fd
	q.tail.Store(t + 1)
}

func (q *queue) pop() (int32, bool) {
	h := q.head.Load()
	if h == q.tail.Load() {
		return 0, false
	}
	fd := q.fds[h%uint32(len(q.fds))]
	q.head.Store(h + 1)
	return fd, true
}

// Pop returns the next descriptor whose socket had room, for the loop.
func (w *Watcher) Pop() (fd int, ok bool) {
	f, ok := w.queue.pop()
	return int(f), ok
}

// Lost reports, and forgets, whether descriptors were dropped because the
// queue was full: the loop must then check every socket it waits for.
func (w *Watcher) Lost() bool { return w.queue.lost.Swap(false) }
