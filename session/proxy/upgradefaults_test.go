package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tidegate/tidegate/internal/testkit/seam"
	"github.com/tidegate/tidegate/internal/testkit/sockpair"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/handoverwire"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// socketFile returns a duplicate of c's socket as a file, as a hand-over
// carries it, closed when the test ends.
func socketFile(t *testing.T, c net.Conn) *os.File {
	t.Helper()
	f, err := c.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestAdoptingASessionWhoseClientReset: a handed-over session whose client
// reset its connection while it travelled is reported lost by adopt, and
// leaves nothing behind: its backend socket is closed, and no session, slot
// or descriptor stays counted.
func TestAdoptingASessionWhoseClientReset(t *testing.T) {
	be := echoListener(t)
	p, addr := startProxy(t, rawConfig(be)+"loops: 1\n")
	// A session first, so that the proxy knows its loop: an adoption then
	// goes to Loop.AdoptPair.
	held := reactor.HeldFDs()
	first := dial(t, addr)
	echo(t, first, []byte("first"))
	clientPeer, client := sockpair.TCP(t)
	sockpair.Reset(t, clientPeer, client)
	backend, backendPeer := sockpair.TCP(t)
	st, _ := json.Marshal(handoverState{Listener: 0, Raw: true, IP: "127.0.0.1", Group: "main", Backend: be})
	err := p.adopt(st, []*os.File{socketFile(t, client), socketFile(t, backend)}, nil, false)
	client.Close()
	backend.Close()
	if err == nil {
		t.Fatal("adopting a session whose client had reset reported success")
	}
	sockpair.ExpectEnded(t, backendPeer, "the backend socket of the session that was lost")
	waitStats(t, p, "only the first session open", func(st proxymetrics.Stats) bool { return st.Active == 1 && st.Reactor.Active == 2 })
	echo(t, first, []byte("still relaying"))
	waitfor.Value(t, "the descriptors held to be the first session's", reactor.HeldFDs,
		func(h int64) bool { return h == held+fdsPerHandedSession })
}

// tightHandoverPair is handoverPair with the smallest socket buffers the
// kernel allows, so that a few sessions' states fill them.
func tightHandoverPair(t *testing.T) (send, recv *handoverwire.Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 1)
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 1)
	}
	conn := func(fd int) *handoverwire.Conn {
		f := os.NewFile(uintptr(fd), "handover")
		defer f.Close()
		hc, err := handoverwire.FromFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hc.Close() })
		return hc
	}
	return conn(fds[0]), conn(fds[1])
}

// rawSessions opens n raw sessions through the proxy at addr to an echo
// backend and checks that each relays.
func rawSessions(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = dial(t, addr)
		echo(t, conns[i], []byte("before"))
	}
	return conns
}

// relaying counts the sessions of conns that still echo, within d.
func relaying(conns []net.Conn, d time.Duration) int {
	var n atomic.Int32
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := []byte("after")
			_ = c.SetDeadline(time.Now().Add(d))
			defer c.SetDeadline(time.Time{})
			if _, err := c.Write(msg); err != nil {
				return
			}
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(c, got); err == nil && bytes.Equal(got, msg) {
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(n.Load())
}

// TestHandOverToAProcessThatStopsReading: a new process that is alive but
// reads nothing fills the hand-over socket; the hand-over ends within its
// stall bound instead of waiting on the blocked sender for good, and every
// session not yet sent stays here and relays.
func TestHandOverToAProcessThatStopsReading(t *testing.T) {
	const sessions, stall = 60, 500 * time.Millisecond
	be := echoListener(t)
	p, addr := startProxy(t, rawConfig(be))
	conns := rawSessions(t, addr, sessions)
	send, _ := tightHandoverPair(t)
	type result struct {
		n   int
		err error
	}
	res := make(chan result, 1)
	start := time.Now()
	go func() {
		n, err := p.HandOver(context.Background(), send, HandOverOptions{Stall: stall, Acked: true})
		res <- result{n, err}
	}()
	var r result
	select {
	case r = <-res:
	case <-time.After(20 * stall):
		t.Fatalf("HandOver to a process that reads nothing did not return in %s", 20*stall)
	}
	t.Logf("HandOver returned after %s: %d sent, %v", time.Since(start).Round(time.Millisecond), r.n, r.err)
	if r.err == nil {
		t.Fatal("HandOver to a process that reads nothing reported success")
	}
	if r.n >= sessions {
		t.Fatalf("HandOver sent all %d sessions into a socket buffer of a few kilobytes", r.n)
	}
	if a := p.Stats().Active; a != int64(sessions-r.n) {
		t.Fatalf("%d sessions here after %d of %d were sent, want %d", a, r.n, sessions, sessions-r.n)
	}
	if got := relaying(conns, 2*time.Second); got != sessions-r.n {
		t.Fatalf("%d sessions relay after the hand-over failed, want the %d not sent", got, sessions-r.n)
	}
}

// TestReloadRoutesTheFirstSessionsOfAnAddedListener: a client that
// connects to a listener a reload adds, before the reload has stored the
// configuration that routes it, waits in the backlog and is routed by the
// new configuration (backend b), not by the old one's first listener (a).
func TestReloadRoutesTheFirstSessionsOfAnAddedListener(t *testing.T) {
	a, b := namedBackend(t, "a"), namedBackend(t, "b")
	first, second := freeAddr(t), freeAddr(t)
	text := twoGroups(a, b)
	p, _ := startProxy(t, text(fmt.Sprintf(`{listen: %q, mode: raw, group: ga}`, first)))
	early := make(chan net.Conn, 1)
	seam.Set(t, &testHookListenersOpened, func() {
		c := dial(t, second)
		early <- c
		// Unfixed, the proxy accepts it at once, under the old
		// configuration; fixed, it stays in the backlog and this wait runs out.
		deadline := time.Now().Add(300 * time.Millisecond)
		for p.Stats().Accepted == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	})
	cfg, err := testParseConfig(t, text(fmt.Sprintf(`{listen: %q, mode: raw, group: ga}, {listen: %q, mode: raw, group: gb}`, first, second)))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Loops = 2
	if err := p.Reload(cfg); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	c := <-early
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	name, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the backend's greeting: %v", err)
	}
	if name != "b\n" {
		t.Fatalf("a session on the added listener reached %q, want b", strings.TrimSpace(name))
	}
}

// TestHandOverWithinTheDescriptorBudget: a hand-over whose budget has no
// room for a session's two descriptors detaches nothing, and ends at its
// stall with every session here and relaying; with room for one session at
// a round, it takes them one by one and moves them all;
// the descriptors it held are given back.
func TestHandOverWithinTheDescriptorBudget(t *testing.T) {
	const sessions = 5
	be := echoListener(t)
	oldP, addr := startProxy(t, rawConfig(be))
	newP, _ := startProxy(t, rawConfig(be))
	held := reactor.HeldFDs() // before the sessions, which then hold two each
	conns := rawSessions(t, addr, sessions)

	seam.Set(t, &handoverFDRoom, func(*Proxy) int { return fdsPerHandedSession - 1 })
	send, _ := handoverPair(t)
	n, err := oldP.HandOver(context.Background(), send, HandOverOptions{Stall: 300 * time.Millisecond, Acked: true})
	if err == nil || n != 0 {
		t.Fatalf("a hand-over without descriptors to spare moved %d sessions (%v), want none and an error", n, err)
	}
	if got := relaying(conns, 5*time.Second); got != sessions {
		t.Fatalf("%d of %d sessions relay after a hand-over that had no descriptors to spare", got, sessions)
	}

	// Room for one session a round.
	seam.Set(t, &handoverFDRoom, func(*Proxy) int { return fdsPerHandedSession })
	if got := handOver(t, oldP, newP); got != sessions {
		t.Fatalf("handed over %d sessions, want %d", got, sessions)
	}
	if got := relaying(conns, 5*time.Second); got != sessions {
		t.Fatalf("%d of %d sessions relay on the new proxy", got, sessions)
	}
	// The new proxy's sessions hold what the old one's did, and the hand-over
	// nothing more.
	waitfor.Value(t, "the descriptors held to be the sessions' own", reactor.HeldFDs,
		func(h int64) bool { return h == held+sessions*fdsPerHandedSession })
}
