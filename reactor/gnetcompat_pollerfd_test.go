package reactor

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// pauseProbe pauses the first connection it opens and counts the bytes
// OnTraffic is offered for it; it echoes every other connection.
type pauseProbe struct {
	mu    sync.Mutex
	first *Conn
	got   atomic.Int64
}

func (h *pauseProbe) OnOpen(c *Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first == nil {
		h.first = c
		c.PauseRead()
	}
}

func (h *pauseProbe) OnTraffic(c *Conn) {
	b, _ := c.Peek(-1)
	if h.firstConn() == c {
		h.got.Add(int64(len(b)))
	} else {
		_ = c.Write(b)
	}
	c.Discard(len(b))
}

func (h *pauseProbe) OnClose(*Conn, error) {}

func (h *pauseProbe) firstConn() *Conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.first
}

// TestPollerFD: the descriptor read from gnet's internals is the epoll
// (kqueue) instance gnet registered the connection in, and pausing through it
// stops reads: bytes sent to a paused connection stay in the kernel and reach
// OnTraffic only once it is resumed. Fails loudly if gnet's fields move.
func TestPollerFD(t *testing.T) {
	h := &pauseProbe{}
	s, addr := startServer(t, Config{Loops: 1}, h)
	paused := dial(t, addr)
	waitfor.For(t, "the first connection to open", func() bool { return h.firstConn() != nil })
	loops := s.Loops()
	if len(loops) != 1 {
		t.Fatalf("%d loops registered, want 1", len(loops))
	}
	l := loops[0]
	if l.pollFD < 0 {
		t.Fatal("gnet internals changed: the loop's poller descriptor could not be read; flow control is off")
	}
	first := h.firstConn()
	var sock int
	onLoop(t, first, func() { sock = first.gc.Fd() })
	checkIsGnetPoller(t, l.pollFD, sock)

	const msg = "hello"
	if _, err := paused.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	// The bytes are in the server socket's receive queue before the loop is
	// asked anything more, so a loop still polling for input sees them.
	queued := func() int {
		var n int
		var err error
		onLoop(t, first, func() { n, err = kernelQueued(sock) })
		if err != nil {
			t.Fatalf("reading the receive queue of socket %d: %v", sock, err)
		}
		return n
	}
	read := func() int64 { return h.got.Load() + s.Stats().SpuriousWakes }
	waitfor.For(t, "the message to reach the paused socket", func() bool { return queued() == len(msg) || read() > 0 })
	// Two round trips on a second connection of the same loop: the second
	// request is read in a later pass of the loop than the epoll_wait that
	// reported the first, and a level-triggered wait reports every readable
	// socket in its set, so had the paused socket been readable for gnet,
	// its bytes would have reached OnTraffic by then. No sleep is involved.
	other := dial(t, addr)
	buf := make([]byte, 4)
	for range 2 {
		if _, err := other.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(other, buf); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.got.Load(); n != 0 {
		t.Fatalf("OnTraffic got %d bytes of a paused connection", n)
	}
	if n := s.Stats().SpuriousWakes; n != 0 {
		t.Fatalf("gnet read a paused connection %d times", n)
	}
	if n := queued(); n != len(msg) {
		t.Fatalf("%d bytes in the paused socket's receive queue, want %d", n, len(msg))
	}
	onLoop(t, first, first.ResumeRead)
	waitfor.For(t, "the resumed socket to be read", func() bool { return h.got.Load() == int64(len(msg)) })
}

// TestCheckPollerFDRefusesOtherDescriptors: the check Start runs tells an
// epoll (kqueue) instance from any other descriptor.
func TestCheckPollerFDRefusesOtherDescriptors(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := checkPollerFD(int(r.Fd())); err == nil {
		t.Fatalf("a pipe (descriptor %d) passed for a poller", r.Fd())
	}
	if err := checkPollerFD(-1); err == nil {
		t.Fatal("descriptor -1 passed for a poller")
	}
}

// TestStartRefusesWithoutPoller: when gnet's poller descriptors cannot be
// found or are not pollers, Start fails, releases the listening address and
// leaves nothing running, instead of serving without flow control.
func TestStartRefusesWithoutPoller(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	real := enginePollerFDs
	t.Cleanup(func() { enginePollerFDs = real })
	for _, tc := range []struct {
		name string
		fds  func(gnet.Engine) ([]int, error)
		want string
	}{
		{"lookup fails", func(gnet.Engine) ([]int, error) { return nil, errors.New("no field fd") }, "no field fd"},
		{"not a poller", func(gnet.Engine) ([]int, error) { return []int{int(r.Fd())}, nil }, "event loop 0"},
		{"too few loops", func(gnet.Engine) ([]int, error) { return nil, nil }, "0 event loops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := leaktest.Goroutines()
			enginePollerFDs = tc.fds
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			s, err := NewServer(Config{Addrs: []string{addr}, Loops: 1, Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}, &pauseProbe{})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Start()
			if err == nil {
				_ = s.Stop(t.Context())
				t.Fatal("Start succeeded without the pollers' descriptors")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v, want it to say %q", err, tc.want)
			}
			ln, err = net.Listen("tcp", addr)
			if err != nil {
				t.Fatalf("the address was not released after the failed start: %v", err)
			}
			ln.Close()
			waitfor.Check(t, "the failed start's goroutines to end", func() error {
				if g := leaktest.Goroutines(); g > before {
					return fmt.Errorf("%d goroutines, %d before", g, before)
				}
				return nil
			})
		})
	}
}
