package acceptor

import (
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// gate is a Server that admits while open is set and keeps what it is given.
type gate struct {
	open     atomic.Bool
	enrolled chan net.Conn
}

func (g *gate) Admit() State {
	if g.open.Load() {
		return Running
	}
	return AtMaxConns
}

func (g *gate) Enroll(nc net.Conn, _ int) { g.enrolled <- nc }

func (g *gate) Open() int64 { return 0 }

// startSet starts a Set on one loopback listener for g; hold is Config.Hold.
func startSet(t *testing.T, g *gate, hold chan struct{}) (*Set, string) {
	t.Helper()
	s := NewSet(g, Config{Addrs: []string{"tcp://127.0.0.1:0"}, Logger: zerolog.Nop(), Hold: hold})
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Stop(); s.Wait() })
	a, err := s.Addr(0)
	if err != nil {
		t.Fatal(err)
	}
	return s, a.String()
}

// TestAdmissionPausesAndWakeResumes: while the server refuses admission a
// connection stays in the backlog and the listener reports the reason;
// Wake once admission is back takes it.
func TestAdmissionPausesAndWakeResumes(t *testing.T) {
	g := &gate{enrolled: make(chan net.Conn, 4)}
	s, addr := startSet(t, g, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitfor.For(t, "the listener to pause", func() bool { return s.Health()[0].State == AtMaxConns.String() })
	select {
	case nc := <-g.enrolled:
		nc.Close()
		t.Fatal("a connection was enrolled while admission was refused")
	case <-time.After(100 * time.Millisecond):
	}
	if s.Pauses() != 1 {
		t.Fatalf("%d pauses counted, want 1", s.Pauses())
	}
	g.open.Store(true)
	s.Wake()
	select {
	case nc := <-g.enrolled:
		nc.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the connection was not enrolled after Wake")
	}
	if h := s.Health()[0]; !h.Alive || h.State != Running.String() {
		t.Fatalf("health after resuming: %+v", h)
	}
}

// TestStopAfterBacklogTakesWhatIsQueued: a drain enrolls the connections
// the kernel completed in the backlog before it closes the listener.
func TestStopAfterBacklogTakesWhatIsQueued(t *testing.T) {
	g := &gate{enrolled: make(chan net.Conn, 4)}
	g.open.Store(true)
	s, addr := startSet(t, g, make(chan struct{})) // nothing is accepted until the drain
	c, err := net.Dial("tcp", addr)                // completes in the backlog
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s.StopAfterBacklog()
	select {
	case nc := <-g.enrolled:
		nc.Close()
	default:
		t.Fatal("the connection in the backlog was not enrolled by the drain")
	}
	if h := s.Health()[0]; h.Alive || h.State != Stopped.String() {
		t.Fatalf("health after the drain: %+v", h)
	}
	if _, err := s.Open("tcp://127.0.0.1:0"); err == nil {
		t.Fatal("a listener was added after accepting ended")
	}
}

// TestErrnoNames: accept errors are counted under their errno's name.
func TestErrnoNames(t *testing.T) {
	var e errnoCounter
	e.count(fmt.Errorf("accept: %w", syscall.EMFILE))
	e.count(syscall.EMFILE)
	e.count(syscall.Errno(200))
	e.count(fmt.Errorf("something else"))
	got := e.snapshot()
	if got["EMFILE"] != 2 || got["errno_200"] != 1 || got["other"] != 1 || len(got) != 3 {
		t.Fatalf("counts %v", got)
	}
}
