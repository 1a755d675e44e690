// Package delayq holds bytes for a fixed time before they are written: the
// user-space stand-in for a link delay (netem) that the session benchmark's
// client and the fake backend use to emulate a round-trip time.
//
// A Queue is a first-in first-out run of bytes with the time each chunk
// was pushed; Due returns the leading bytes whose hold has passed. Times
// are plain nanosecond counts from any origin the caller picks, so the
// queue is tested with a fake clock. A Sleeper waits until the next chunk
// is due, more precisely than a Go timer on Linux.
package delayq

import (
	"fmt"
	"time"
)

// Queue holds pushed bytes until delay has passed since each push, keeping
// their order. It is not safe for concurrent use.
type Queue struct {
	delay int64
	buf   []byte
	off   int    // bytes of buf already taken
	marks []mark // chunks not yet wholly taken, oldest first, from mhead
	mhead int
}

// mark is the end (an index into buf) and due time of one pushed chunk.
type mark struct {
	end int
	due int64
}

// New returns an empty queue that holds bytes for delay, which must be
// positive.
func New(delay time.Duration) (*Queue, error) {
	if delay <= 0 {
		return nil, fmt.Errorf("delayq: delay %v: want a positive hold", delay)
	}
	return &Queue{delay: int64(delay)}, nil
}

// Delay returns the hold.
func (q *Queue) Delay() time.Duration { return time.Duration(q.delay) }

// Len returns the bytes held.
func (q *Queue) Len() int { return len(q.buf) - q.off }

// Push copies p into the queue, due at now plus the delay. now must not be
// before the previous Push's, so that chunks fall due in the order pushed.
func (q *Queue) Push(now int64, p []byte) {
	if len(p) == 0 {
		return
	}
	if q.off > 0 && q.off >= len(q.buf)/2 {
		q.compact()
	}
	due := now + q.delay
	q.buf = append(q.buf, p...)
	if n := len(q.marks); n > q.mhead && q.marks[n-1].due >= due {
		q.marks[n-1].end = len(q.buf) // same due time (or a clock that stood still): one chunk
		return
	}
	q.marks = append(q.marks, mark{end: len(q.buf), due: due})
}

// compact moves the untaken bytes and their marks to the front.
func (q *Queue) compact() {
	n := copy(q.buf, q.buf[q.off:])
	q.buf = q.buf[:n]
	m := copy(q.marks, q.marks[q.mhead:])
	q.marks = q.marks[:m]
	for i := range q.marks {
		q.marks[i].end -= q.off
	}
	q.off, q.mhead = 0, 0
}

// Next returns when the oldest held byte falls due; ok is false when the
// queue is empty.
func (q *Queue) Next() (due int64, ok bool) {
	if q.mhead == len(q.marks) {
		return 0, false
	}
	return q.marks[q.mhead].due, true
}

// Due returns the leading held bytes that are due at now, in the order
// pushed; they stay held until Take. The slice is valid until the next Push.
func (q *Queue) Due(now int64) []byte {
	end := q.off
	for i := q.mhead; i < len(q.marks) && q.marks[i].due <= now; i++ {
		end = q.marks[i].end
	}
	return q.buf[q.off:end]
}

// Take drops the first n held bytes, once they are written; n must not
// exceed what Due returned.
func (q *Queue) Take(n int) {
	if n < 0 || n > q.Len() {
		panic(fmt.Sprintf("delayq: take %d of %d held bytes", n, q.Len()))
	}
	q.off += n
	for q.mhead < len(q.marks) && q.marks[q.mhead].end <= q.off {
		q.mhead++
	}
	if q.off == len(q.buf) {
		q.buf, q.marks = q.buf[:0], q.marks[:0]
		q.off, q.mhead = 0, 0
	}
}
