package reactor

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor/chunkqueue"
)

// TestConnSize: a Conn is held for its connection's whole life, two per
// proxied session; what only part of that life needs belongs in connAux.
func TestConnSize(t *testing.T) {
	if n := unsafe.Sizeof(Conn{}); n > 112 {
		t.Fatalf("Conn is %d bytes, want at most 112 (one size class): put state an idle connection does not need in connAux", n)
	}
}

// relayHalf is the accepted side of a relay: it dials the backend and
// relays half-closes, so the reactor queues the outbound side's output.
// The first outbound connection writes payload (more than the socket takes
// at once: the rest is queued); the others only dial.
type relayHalf struct {
	backend string
	payload []byte
	mu      sync.Mutex
	conns   []*Conn // touched on the loop; the mutex keeps the race detector informed
	dialed  int
}

func (h *relayHalf) add(c *Conn) {
	h.mu.Lock()
	h.conns = append(h.conns, c)
	h.mu.Unlock()
}

func (h *relayHalf) OnOpen(c *Conn) {
	h.add(c)
	c.Loop().Dial(h.backend, 2*time.Second, relayOut{h}, nil)
}
func (h *relayHalf) OnTraffic(c *Conn)    { c.Discard(-1) }
func (h *relayHalf) OnClose(*Conn, error) {}
func (h *relayHalf) OnReadEOF(c *Conn)    { c.Close() }

type relayOut struct{ h *relayHalf }

func (o relayOut) OnOpen(c *Conn) {
	o.h.add(c)
	if o.h.dialed++; o.h.dialed == 1 {
		_ = c.Write(o.h.payload)
	}
}
func (o relayOut) OnTraffic(c *Conn)    { c.Discard(-1) }
func (o relayOut) OnClose(*Conn, error) {}
func (o relayOut) OnReadEOF(c *Conn)    { c.Close() }

// TestIdleConnKeepsNothing: once a dial has opened (second outbound
// connection) and once a queue has drained (first one), a connection holds
// no connAux (the dial's deadline and closure, the queue's chunk list), and
// the IPs of its addresses are the loop's shared copies, not slices into
// the Sockaddrs of the accept and the connect.
func TestIdleConnKeepsNothing(t *testing.T) {
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	h := &relayHalf{backend: backend.Addr().String(), payload: make([]byte, 8<<20)}
	s, addr := startServer(t, Config{Loops: 1}, h)
	const clients = 2
	for i := 0; i < clients; i++ {
		dial(t, addr)
		bc, err := backend.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer bc.Close()
		if i == 0 { // read what the outbound side queued, all of it: its queue drains
			_ = bc.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadFull(bc, make([]byte, len(h.payload))); err != nil {
				t.Fatalf("reading the payload: %v", err)
			}
		}
	}
	l := s.Loops()[0]
	onLoop := func(f func() bool) bool {
		res := make(chan bool, 1)
		if err := l.Execute(func() { res <- f() }); err != nil {
			t.Fatal(err)
		}
		return <-res
	}
	// The queue's last write and the check that ends its wait come from the
	// drain watcher, a moment after the backend has read everything.
	waitfor.For(t, "the outbound connections' queues to drain", func() bool {
		return onLoop(func() bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.conns) != 2*clients {
				return false
			}
			for _, c := range h.conns {
				if c.OutboundBuffered() > 0 {
					return false
				}
			}
			return true
		})
	})
	onLoop(func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		ipOf := func(a net.Addr) net.IP { return a.(*net.TCPAddr).IP }
		same := func(a, b net.IP) bool {
			return len(a) > 0 && len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
		}
		var first [2]*Conn // the first accepted and the first outbound connection
		for _, c := range h.conns {
			if c.aux != nil {
				t.Errorf("an open idle connection (listener %d) holds its connAux: %+v", c.Listener(), *c.aux)
			}
			if !ipOf(c.LocalAddr()).Equal(net.IPv4(127, 0, 0, 1)) || !ipOf(c.RemoteAddr()).Equal(net.IPv4(127, 0, 0, 1)) {
				t.Errorf("addresses %v -> %v, want 127.0.0.1 both", c.LocalAddr(), c.RemoteAddr())
			}
			k := 0
			if c.Listener() < 0 {
				k = 1
			}
			if first[k] == nil {
				first[k] = c
				continue
			}
			f := first[k]
			if !same(ipOf(c.LocalAddr()), ipOf(f.LocalAddr())) || !same(ipOf(c.RemoteAddr()), ipOf(f.RemoteAddr())) {
				t.Errorf("two connections' IPs are separate copies (%v, %v): they should be the loop's shared ones", c.LocalAddr(), f.LocalAddr())
			}
		}
		return true
	})
}

// TestAuxReusedAcrossQueueRounds: a connection whose queue fills and drains
// in turn gets its loop's spare aux back, chunk list capacity and all,
// instead of a new allocation each round; the spares stay bounded.
func TestAuxReusedAcrossQueueRounds(t *testing.T) {
	l := &Loop{}
	c := &Conn{loop: l}
	a := c.more()
	a.out.Push(make([]byte, 3*chunkqueue.ChunkSize))
	a.out.Release()
	c.tidy()
	if c.aux != nil || len(l.spareAux) != 1 {
		t.Fatalf("after tidy: aux %p, %d spares; want none held, one spare", c.aux, len(l.spareAux))
	}
	if b := c.more(); b != a || b.out.Cap() < 3 || b.out.Chunks() != 0 || b.out.Len() != 0 {
		t.Fatalf("second round: aux reused %v, chunk list len %d cap %d, %d queued; want the spare, empty, capacity kept",
			b == a, b.out.Chunks(), b.out.Cap(), b.out.Len())
	}
	if n := testing.AllocsPerRun(100, func() { c.tidy(); c.more() }); n != 0 {
		t.Fatalf("%v allocations per round, want 0", n)
	}
	conns := make([]*Conn, maxSpareAux+10)
	for i := range conns {
		conns[i] = &Conn{loop: l}
		conns[i].more()
	}
	for _, c := range conns {
		c.tidy()
	}
	if len(l.spareAux) != maxSpareAux {
		t.Fatalf("%d spares, want at most %d", len(l.spareAux), maxSpareAux)
	}
}
