package reactor

import (
	"net"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// TestGnetWorkersFollowRegistrations holds the only loop busy while
// connections arrive: each registration waits on a gnet worker until the
// loop opens it, so GnetWorkers (tidegate_gnet_workers) must count at least
// one worker per registration in flight. More connections are made than
// workers were alive before, so that workers left idle by earlier tests
// cannot pass the check for a pool gnet no longer uses.
func TestGnetWorkersFollowRegistrations(t *testing.T) {
	s, addr := startServer(t, Config{Loops: 1}, &echoHandler{})
	n := max(32, GnetWorkers()+16)
	release := make(chan struct{})
	if err := echoOnce(dial(t, addr), 5*time.Second); err != nil { // the loop is known once it had a connection
		t.Fatal(err)
	}
	if err := s.Loops()[0].Execute(func() { <-release }); err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	conns := make([]*net.TCPConn, 0, n)
	for range n {
		conns = append(conns, dial(t, addr))
	}
	waitfor.Value(t, "gnet workers with the loop held", GnetWorkers, func(w int) bool { return w >= n })
	close(release)
	released = true
	for i, c := range conns {
		if err := echoOnce(c, 5*time.Second); err != nil {
			t.Fatalf("connection %d after the loop was released: %v", i, err)
		}
	}
}
