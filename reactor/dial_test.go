package reactor

import (
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dialingHandler dials n connections to target from the first accepted
// connection's loop and records how each ended.
type dialingHandler struct {
	target  string
	n       int
	mu      sync.Mutex
	results []error
	done    chan struct{}
	maxSeen atomic.Int32
}

type outbound struct{ h *dialingHandler }

func (o outbound) OnOpen(c *Conn)    { c.Close() }
func (o outbound) OnTraffic(c *Conn) { c.Discard(-1) }
func (o outbound) OnClose(_ *Conn, err error) {
	o.h.mu.Lock()
	defer o.h.mu.Unlock()
	o.h.results = append(o.h.results, err)
	if len(o.h.results) == o.h.n {
		close(o.h.done)
	}
}

func (h *dialingHandler) OnOpen(c *Conn) {
	for i := 0; i < h.n; i++ {
		c.Loop().Dial(h.target, 2*time.Second, outbound{h}, nil)
		h.maxSeen.Store(max(h.maxSeen.Load(), int32(c.Loop().srv.dialer.Workers())))
	}
}
func (h *dialingHandler) OnTraffic(c *Conn)    { c.Discard(-1) }
func (h *dialingHandler) OnClose(*Conn, error) {}

// TestDialPoolIsBoundedAndReportsFailures dials a closed port 500 times
// from one loop: every dial must end in OnClose with a *DialError, the dial
// goroutines must stay within their bound, and Stop must end them.
func TestDialPoolIsBoundedAndReportsFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	h := &dialingHandler{target: closed, n: 500, done: make(chan struct{})}
	s, addr := startServer(t, Config{Loops: 1}, h)
	dial(t, addr)
	select {
	case <-h.done:
	case <-time.After(20 * time.Second):
		t.Fatal("not every dial ended")
	}
	h.mu.Lock()
	for i, err := range h.results {
		var de *DialError
		if !errors.As(err, &de) || de.Addr != closed {
			t.Fatalf("dial %d ended with %v, want a *DialError for %s", i, err, closed)
		}
		if n := strings.Count(err.Error(), closed); n != 1 {
			t.Fatalf("dial %d: %q names %s %d times, want once", i, err, closed, n)
		}
	}
	h.mu.Unlock()
	if m := h.maxSeen.Load(); m > maxDialWorkers {
		t.Fatalf("%d dial workers, bound %d", m, maxDialWorkers)
	}
	if st := s.Stats(); st.DialFailed != 500 {
		t.Fatalf("DialFailed %d, want 500", st.DialFailed)
	}
}

// TestStaleDialIsNotMade: a dial job taken by a worker after its deadline
// (it waited in the queue behind others) is not made: under a lagging loop
// the dials of sessions long gone would otherwise take every worker, for a
// whole connect timeout each, while new ones are refused as too many.
func TestStaleDialIsNotMade(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	h := &loopCatcher{loop: make(chan *Loop, 1)}
	_, addr := startServer(t, Config{Loops: 1}, h)
	dial(t, addr)
	l := <-h.loop
	dialJob{l: l, c: newConn(l, h), addr: ln.Addr().String(), deadline: time.Now().Add(-time.Millisecond)}.Run(nil)
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(500 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Fatal("a dial job past its deadline connected to its address")
	}
}

// loopCatcher hands over the loop of the first connection it accepts.
type loopCatcher struct{ loop chan *Loop }

func (h *loopCatcher) OnOpen(c *Conn) {
	select {
	case h.loop <- c.Loop():
	default:
	}
}
func (h *loopCatcher) OnTraffic(c *Conn)    { c.Discard(-1) }
func (h *loopCatcher) OnClose(*Conn, error) {}
