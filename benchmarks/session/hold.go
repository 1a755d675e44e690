package session

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/internal/delayq"
)

// holder is a client connection's emulated link delay (--app-rtt): bursts
// are stamped when the window lets them go and written when their hold has
// passed, in order, by one writer goroutine per connection that sleeps
// until the oldest held burst is due. The connection's own goroutine only
// pushes and reads.
type holder struct {
	nc   net.Conn
	id   uint32
	base time.Time

	mu      sync.Mutex
	q       *delayq.Queue
	scratch []byte // the writer's copy of the due bytes, written outside mu

	wake    chan struct{} // an empty queue got bytes
	stop    chan struct{}
	stopped sync.Once
	done    chan struct{}
	sl      *delayq.Sleeper

	err atomic.Pointer[error] // the write that ended the connection
	// lateNs sums, over writes, how long after its due time the oldest
	// burst of the write went out; writes counts them.
	lateNs, writes atomic.Int64
}

func newHolder(nc net.Conn, id uint32, base time.Time, hold time.Duration) (*holder, error) {
	q, err := delayq.New(hold)
	if err != nil {
		return nil, fmt.Errorf("conn %d: %w", id, err)
	}
	sl, err := delayq.NewSleeper()
	if err != nil {
		return nil, fmt.Errorf("conn %d: %w", id, err)
	}
	h := &holder{nc: nc, id: id, base: base, q: q, sl: sl,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go h.run()
	return h, nil
}

// push holds b, a burst ready at now (the client's clock), for the hold.
func (h *holder) push(now int64, b []byte) {
	h.mu.Lock()
	empty := h.q.Len() == 0
	h.q.Push(now, b)
	h.mu.Unlock()
	if empty {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

// run writes the held bytes as they fall due, until close or a write fails.
func (h *holder) run() {
	defer close(h.done)
	for {
		h.mu.Lock()
		due, ok := h.q.Next()
		h.mu.Unlock()
		if !ok {
			select {
			case <-h.wake:
				continue
			case <-h.stop:
				return
			}
		}
		if err := h.sl.SleepUntil(h.base.Add(time.Duration(due))); err != nil {
			return // closed
		}
		now := int64(time.Since(h.base))
		h.mu.Lock()
		out := h.q.Due(now)
		h.scratch = append(h.scratch[:0], out...)
		h.q.Take(len(out))
		h.mu.Unlock()
		if len(h.scratch) == 0 {
			continue
		}
		h.lateNs.Add(now - due)
		h.writes.Add(1)
		if _, err := h.nc.Write(h.scratch); err != nil {
			err = fmt.Errorf("conn %d: writing %d held bytes: %w", h.id, len(h.scratch), err)
			h.err.Store(&err)
			h.nc.Close() // the reader's blocked Read fails and reports this error
			return
		}
	}
}

// writeErr returns the error that ended the writer, if one did.
func (h *holder) writeErr() error {
	if p := h.err.Load(); p != nil {
		return *p
	}
	return nil
}

// close stops the writer and waits for it.
func (h *holder) close() {
	h.stopped.Do(func() {
		close(h.stop)
		h.sl.Close()
	})
	<-h.done
}
