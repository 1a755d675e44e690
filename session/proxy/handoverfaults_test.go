package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tidegate/tidegate/internal/testkit/seam"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/handoverwire"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// A live upgrade's faults, step by step, in one process: the old proxy
// hands its sessions over a socket pair to what plays the new process, a
// real proxy's TakeOver or a stand-in that misbehaves. A fault strikes one
// session (the victim: its client or its backend resets, half-closes or
// stops reading) at one step, or the new process itself. For each (step,
// fault): HandOver returns within its stall bound; every session that
// could be kept relays, on exactly one of the two proxies, with every byte
// whole and in order; the victim ends as its fault says; and the
// descriptors held are those of the sessions left, nothing more.
// docs/live-upgrade.md lists these with the other fault tests.

// faultStep is where in a hand-over a fault strikes.
type faultStep string

const (
	atRelaying   faultStep = "relaying"    // before the hand-over: the old proxy relays the session
	atDetached   faultStep = "detached"    // detached from the old proxy, not yet sent
	atOnItsWay   faultStep = "on its way"  // sent, not yet adopted by the new proxy
	atAdopted    faultStep = "adopted"     // just adopted by the new proxy
	atHandedOver faultStep = "handed over" // after the hand-over: the new proxy relays it
)

// peerFault is what the victim's client or backend does.
type peerFault string

const (
	clientReset         peerFault = "client reset"
	backendReset        peerFault = "backend reset"
	clientHalfClose     peerFault = "client half-close"
	backendHalfClose    peerFault = "backend half-close"
	clientStopsReading  peerFault = "client stops reading"
	backendStopsReading peerFault = "backend stops reading"
)

// floodSize is what a peer that stops reading is sent meanwhile: more than
// the sockets' buffers and the proxy's watermarks hold, so that the
// proxies queue and pause.
const floodSize = 2 << 20

// gatedEcho is a backend connection that echoes what it reads, and that a
// test can stop reading. At the client's half-close it half-closes too.
type gatedEcho struct {
	c       *net.TCPConn
	mu      sync.Mutex
	cond    *sync.Cond
	stopped bool
	done    chan struct{} // closed when its connection ended
}

func newGatedEcho(c net.Conn) *gatedEcho {
	g := &gatedEcho{c: c.(*net.TCPConn), done: make(chan struct{})}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gatedEcho) run() {
	defer close(g.done)
	buf := make([]byte, 32<<10)
	for {
		g.mu.Lock()
		for g.stopped {
			g.cond.Wait()
		}
		g.mu.Unlock()
		n, err := g.c.Read(buf)
		if n > 0 {
			_, _ = g.c.Write(buf[:n]) // fails once this side half-closed: dropped
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				_ = g.c.CloseWrite()
			}
			return
		}
	}
}

// stopReading stops (true) or resumes (false) the reads.
func (g *gatedEcho) stopReading(stop bool) {
	g.mu.Lock()
	g.stopped = stop
	g.mu.Unlock()
	g.cond.Broadcast()
}

// victim is the session a peer fault strikes.
type victim struct {
	t       *testing.T
	client  *net.TCPConn
	backend *gatedEcho
	fault   peerFault
	flood   []byte
	flooded chan error // the writer of the flood ended
	once    sync.Once
	struck  bool // under once
}

// strike makes the fault happen, once.
func (v *victim) strike() {
	v.once.Do(func() {
		v.struck = true
		switch v.fault {
		case clientReset:
			_ = v.client.SetLinger(0)
			_ = v.client.Close()
		case backendReset:
			_ = v.backend.c.SetLinger(0)
			_ = v.backend.c.Close()
		case clientHalfClose:
			_ = v.client.CloseWrite()
		case backendHalfClose:
			_ = v.backend.c.CloseWrite()
		case clientStopsReading, backendStopsReading:
			if v.fault == backendStopsReading {
				v.backend.stopReading(true)
			}
			// The client writes without reading: the echo comes back only
			// once check reads it.
			go func() {
				_, err := v.client.Write(v.flood)
				v.flooded <- err
			}()
		}
	})
}

// kept says whether the victim's session outlives its fault.
func (v *victim) kept() bool { return v.fault == clientStopsReading || v.fault == backendStopsReading }

// ended waits, on p, for the victim's session to have ended, when its
// fault ends it: a fault at a step strikes while the session is there.
func (v *victim) ended(p *Proxy, others int) {
	if !v.kept() && v.fault != backendHalfClose {
		waitStats(v.t, p, "the victim's session to end", func(st proxymetrics.Stats) bool { return st.Active == int64(others) })
	}
}

// check, once the hand-over is over, resumes what stopped and checks that
// the victim's session ended as its fault says, or relays every byte.
func (v *victim) check() {
	t := v.t
	v.once.Do(func() {}) // after a strike of a seam, or none
	if !v.struck {
		t.Fatalf("the session never got to the step: the fault did not strike")
	}
	_ = v.client.SetDeadline(time.Now().Add(20 * time.Second))
	defer v.client.SetDeadline(time.Time{})
	switch v.fault {
	case clientReset:
		select {
		case <-v.backend.done:
		case <-time.After(20 * time.Second):
			t.Fatal("the backend of the client that reset was not closed")
		}
	case backendReset, clientHalfClose:
		// The client sees the end, with nothing it was not sent before.
		if rest, err := io.ReadAll(v.client); err != nil && v.fault == clientHalfClose || len(rest) != 0 {
			t.Fatalf("the victim's client read %d bytes more and then %v, want the end", len(rest), err)
		}
	case backendHalfClose:
		if rest, err := io.ReadAll(v.client); err != nil || len(rest) != 0 {
			t.Fatalf("after its backend half-closed, the client read %d bytes and then %v, want the end", len(rest), err)
		}
		_ = v.client.CloseWrite() // and then the backend sees the end, and the session ends
		select {
		case <-v.backend.done:
		case <-time.After(20 * time.Second):
			t.Fatal("the backend that half-closed did not see its client's end")
		}
	case clientStopsReading, backendStopsReading:
		v.backend.stopReading(false)
		got := make([]byte, len(v.flood))
		if _, err := io.ReadFull(v.client, got); err != nil {
			t.Fatalf("reading the echo back after the peer read again: %v", err)
		}
		if !bytes.Equal(got, v.flood) {
			t.Fatalf("the %d bytes echoed back through the hand-over are not the bytes sent", len(got))
		}
		if err := <-v.flooded; err != nil {
			t.Fatalf("writing %d bytes to a session whose peer stopped reading: %v", len(v.flood), err)
		}
	}
}

// peerOf returns the address of the peer of socket f.
func peerOf(t *testing.T, f *os.File) string {
	rc, err := f.SyscallConn()
	if err != nil {
		t.Error(err)
		return ""
	}
	var sa unix.Sockaddr
	_ = rc.Control(func(fd uintptr) { sa, _ = unix.Getpeername(int(fd)) })
	if in, ok := sa.(*unix.SockaddrInet4); ok {
		return netip.AddrPortFrom(netip.AddrFrom4(in.Addr), uint16(in.Port)).String()
	}
	return ""
}

// newSide plays the new process on its end of the hand-over socket: it
// returns once it is done. handedOver is closed when HandOver returned.
type newSide func(t *testing.T, end *os.File, newP *Proxy, handedOver <-chan struct{})

// takeOver is the well-behaved new process.
func takeOver(t *testing.T, end *os.File, newP *Proxy, _ <-chan struct{}) {
	recv, err := handoverwire.FromFile(end)
	if err != nil {
		t.Error(err)
		return
	}
	defer recv.Close()
	if _, err := newP.TakeOver(recv); err != nil {
		t.Logf("TakeOver: %v", err)
	}
}

// dies reads first messages, closing what came with them, and closes: a
// new process killed part way, before it adopted any.
func dies(first int) newSide {
	return func(t *testing.T, end *os.File, _ *Proxy, _ <-chan struct{}) {
		recv, err := handoverwire.FromFile(end)
		if err != nil {
			t.Error(err)
			return
		}
		defer recv.Close()
		for range first {
			_, files, err := recv.Recv()
			for _, f := range files {
				f.Close()
			}
			if err != nil {
				return
			}
		}
	}
}

// killedAfterAdopting adopts the first session and is then killed: its
// end of the hand-over socket closes and its loops stop, ending the session
// it adopted (gone with it, as its tickets); the sessions after it, sent
// and never acknowledged, are held until then and come back.
func killedAfterAdopting(t *testing.T, end *os.File, newP *Proxy, _ <-chan struct{}) {
	recv, err := handoverwire.FromFile(end)
	if err != nil {
		t.Error(err)
		return
	}
	defer recv.Close()
	killed := make(chan struct{})
	seam.Set(t, &testHookTakeOverAdopt, func(place int64, _ []*os.File) {
		if place > 0 {
			<-killed
		}
	})
	seam.Set(t, &testHookTakeOverAdopted, func(place int64, err error) {
		if place != 0 {
			return
		}
		defer close(killed)
		if err != nil {
			t.Errorf("the first session's adoption: %v", err)
			return
		}
		_ = recv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := newP.Stop(ctx); err != nil {
			t.Errorf("stopping the new process: %v", err)
		}
	})
	if _, err := newP.TakeOver(recv); err != nil {
		t.Logf("TakeOver: %v", err)
	}
}

// stalls reads nothing until the hand-over gave up on it; then it exits
// (its end closes, with the sessions still in it) or stays (its end stays
// open until the old side closes).
func stalls(exits bool) newSide {
	return func(t *testing.T, end *os.File, _ *Proxy, handedOver <-chan struct{}) {
		<-handedOver
		if !exits {
			c, err := net.FileConn(end)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			_, _ = io.Copy(io.Discard, c) // until the old side closes
		}
	}
}

// answersGarbage reads some of the first message and writes back bytes
// that are no message (a length over the bound), then reads until the old
// process ends the socket.
func answersGarbage(t *testing.T, end *os.File, _ *Proxy, _ <-chan struct{}) {
	c, err := net.FileConn(end)
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	// A plain read takes no control message: the kernel closes the
	// descriptors that came with these bytes.
	_, _ = c.Read(make([]byte, 64))
	_, _ = c.Write([]byte{0xff, 0xff, 0xff, 0xff, 'x'})
	_, _ = io.Copy(io.Discard, c)
}

// handOverFault is one row of TestHandOverFaults.
type handOverFault struct {
	step  faultStep
	fault peerFault // struck on the victim; "" when the fault is the new process's
	what  string    // the new process's fault
	side  newSide   // nil: takeOver
	// setup arms a fault of the new process (an adoption seam).
	setup func(t *testing.T)
	// arm, when set, arms a fault that needs the proxies (the new
	// process's SIGTERM: its drain, Shutdown). The test waits for done,
	// when not nil, once HandOver returned.
	arm func(t *testing.T, oldP, newP *Proxy) (done <-chan struct{})
	// lost says the fault may take sessions with it that nothing could
	// keep: those sent to a new process that stalls, or that answers
	// garbage.
	lost bool
	// gone says the new process ends its side of the hand-over socket by
	// itself (it exits): the process side then calls HandOverLost.
	gone bool
	// ends is how many sessions the new process's fault ends (none of
	// them could be kept).
	ends int
	// fails says HandOver reports an error; maybe that it may.
	fails, maybe bool
}

func (tc handOverFault) name() string {
	if tc.fault != "" {
		return string(tc.step) + "/" + string(tc.fault)
	}
	return string(tc.step) + "/" + tc.what
}

func handOverFaultRows() []handOverFault {
	var rows []handOverFault
	for _, step := range []faultStep{atRelaying, atDetached, atOnItsWay, atAdopted, atHandedOver} {
		for _, f := range []peerFault{clientReset, backendReset, clientHalfClose, backendHalfClose, clientStopsReading, backendStopsReading} {
			// A session whose peer stops reading may have its output in
			// gnet's buffer, where a hand-over cannot take it: it then
			// stays until the stall.
			// So may a half-closed one, which finishes here, if its
			// half-close arrives before the hand-over's first round.
			maybe := step == atRelaying && (f == clientStopsReading || f == backendStopsReading || f == backendHalfClose)
			rows = append(rows, handOverFault{step: step, fault: f, maybe: maybe})
		}
	}
	return append(rows,
		handOverFault{step: atRelaying, what: "none"},
		handOverFault{step: atOnItsWay, what: "new process killed", side: dies(1), fails: true, gone: true},
		handOverFault{step: atAdopted, what: "new process killed", side: killedAfterAdopting, fails: true, gone: true, ends: 1},
		handOverFault{step: atOnItsWay, what: "new process stalls, then exits", side: stalls(true), fails: true, gone: true},
		handOverFault{step: atOnItsWay, what: "new process stalls", side: stalls(false), fails: true, lost: true},
		handOverFault{step: atOnItsWay, what: "new process answers garbage", side: answersGarbage, fails: true, lost: true},
		handOverFault{step: atOnItsWay, what: "descriptor limit as the new process receives", arm: descriptorLimitAtReceive, fails: true},
		handOverFault{step: atAdopted, what: "descriptor limit in the new process", setup: descriptorLimitAtAdoption, fails: true},
		handOverFault{step: atOnItsWay, what: "SIGTERM to the new process", arm: sigtermBeforeAdopting, fails: true},
		// Sessions adopted before the drain ends are closed at its
		// deadline; those that arrive after are refused and come back.
		handOverFault{step: atAdopted, what: "SIGTERM to the new process", arm: sigtermWhileAdopting, lost: true, maybe: true},
		handOverFault{step: atAdopted, what: "the new process's drain deadline before it relays", ends: 1,
			setup: func(t *testing.T) { drainDeadlineBeforeRelaying(t, "") }},
	)
}

func TestHandOverFaults(t *testing.T) {
	const sessions, stall = 4, 300 * time.Millisecond
	for _, tc := range handOverFaultRows() {
		t.Run(tc.name(), func(t *testing.T) {
			backends := make(chan *gatedEcho, sessions)
			be := testserver.Conns(t, func(c net.Conn) {
				g := newGatedEcho(c)
				backends <- g
				g.run()
			})
			oldP, addr := startProxy(t, rawConfig(be))
			newP, _ := startProxy(t, rawConfig(be))
			held := reactor.HeldFDs()
			conns := rawSessions(t, addr, sessions)
			others := conns
			var v *victim
			if tc.fault != "" {
				v = &victim{t: t, client: conns[0].(*net.TCPConn), backend: <-backends, fault: tc.fault,
					flood: bytes.Repeat([]byte("flood..."), floodSize/8), flooded: make(chan error, 1)}
				others = conns[1:]
				armVictim(t, tc.step, v)
			}
			if tc.setup != nil {
				tc.setup(t)
			}
			var drained <-chan struct{}
			if tc.arm != nil {
				drained = tc.arm(t, oldP, newP)
			}
			if v != nil && tc.step == atRelaying {
				v.strike()
				v.ended(oldP, len(others))
			}
			h := runHandOver(t, oldP, newP, tc.side, stall)
			err, took, sideDone := h.err, h.took, h.sideDone
			if took > 4*stall+5*time.Second {
				t.Fatalf("HandOver took %s, past its stall bound of %s", took, stall)
			}
			if (err != nil) != tc.fails && !tc.maybe {
				t.Fatalf("HandOver: %v, want an error: %v", err, tc.fails)
			}
			if drained != nil {
				<-drained
			}
			if tc.gone {
				// What the process side does when the new process is gone.
				<-sideDone
				oldP.Reactor().ResumeAccepting()
				oldP.HandOverLost()
			}
			if v != nil && tc.step == atHandedOver {
				v.strike()
				v.ended(newP, len(others))
			}
			if v != nil {
				v.check()
			}
			h.send.Close()
			<-sideDone
			kept := relaying(others, 2*time.Second)
			if !tc.lost && kept != len(others)-tc.ends {
				t.Fatalf("%d of %d sessions relay after the hand-over, want %d", kept, len(others), len(others)-tc.ends)
			}
			if v != nil && v.kept() {
				if relaying([]net.Conn{v.client}, 2*time.Second) != 1 {
					t.Fatal("the victim's session does not relay after its peer read again")
				}
				kept++
			}
			// Every session relays on one proxy only, and what is gone is
			// gone from both.
			waitStats(t, oldP, "the old proxy to keep only the sessions that relay", func(st proxymetrics.Stats) bool {
				return st.Active+newP.Stats().Active == int64(kept)
			})
			waitfor.Value(t, "the MaxConns slots to be the sessions' own", func() int64 {
				return oldP.Reactor().AcceptedOpen() + newP.Reactor().AcceptedOpen()
			}, func(n int64) bool { return n == int64(kept) })
			waitfor.Value(t, "the descriptors held to be the sessions' own", reactor.HeldFDs,
				func(h int64) bool { return h == held+int64(kept*fdsPerHandedSession) })
		})
	}
}

// sigtermBeforeAdopting drains the new process, as its SIGTERM right after
// it said it is ready does, before the first session arrives: with nothing
// open there, the drain ends at once and stops its loops, so its take-over
// refuses every session, and the old process takes them all back.
func sigtermBeforeAdopting(t *testing.T, _, newP *Proxy) <-chan struct{} {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := newP.Shutdown(ctx); err != nil {
		t.Fatalf("draining the new process with nothing open: %v", err)
	}
	return nil
}

// sigtermWhileAdopting drains the new process, as its SIGTERM does with a
// short drain timeout, once it has adopted the first session: the next
// adoptions run beside the drain, which closes what it has at its deadline
// and stops the loops; a session that arrives after is refused and comes
// back to the old process.
func sigtermWhileAdopting(t *testing.T, _, newP *Proxy) <-chan struct{} {
	drained := make(chan struct{})
	var once sync.Once
	seam.Set(t, &testHookTakeOverAdopted, func(_ int64, err error) {
		if err != nil {
			return
		}
		once.Do(func() {
			go func() {
				defer close(drained)
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				if err := newP.Shutdown(ctx); !errors.Is(err, reactor.ErrDrainDeadline) {
					t.Errorf("draining the new process with a session open: %v, want the drain deadline", err)
				}
			}()
			waitfor.Value(t, "the new process to drain", func() bool { return newP.Reactor().Health().Draining },
				func(d bool) bool { return d })
		})
	})
	return drained
}

// drainDeadlineBeforeRelaying does to the session of the client at
// victim (the first one registered when "") what the new process's drain
// deadline does (Loop.closeAll), on its loop once both its sockets are
// registered and before its goAhead runs: the session ends, and nothing of
// it is left behind (its goAhead once panicked on what the close dropped).
func drainDeadlineBeforeRelaying(t *testing.T, victim string) {
	var once sync.Once
	seam.Set(t, &testHookAdoptRegistered, func(c *reactor.Conn) {
		if victim != "" && c.RemoteAddr().String() != victim {
			return
		}
		once.Do(func() {
			// gnet runs the close itself as a task after this one: it is
			// queued before the goAhead once this one has run.
			closed := make(chan struct{})
			if err := c.Loop().Execute(func() {
				defer close(closed)
				(*clientHandler)(c.Value.(*session).p).OnDrainDeadline(c)
				c.Close()
			}); err != nil {
				t.Errorf("closing the session at its registration: %v", err)
				return
			}
			<-closed
		})
	})
}

// handOverRun is a hand-over runHandOver ran: HandOver's results and how
// long it took, the old side's socket (the caller closes it), and the end
// of the new side (closed when it returned).
type handOverRun struct {
	n        int
	err      error
	took     time.Duration
	send     *handoverwire.Conn
	sideDone chan struct{}
}

// runHandOver hands oldP's sessions over to side (takeOver when nil)
// playing newP, on a new socket pair, with per-session acknowledgements;
// the side learns that HandOver returned.
func runHandOver(t *testing.T, oldP, newP *Proxy, side newSide, stall time.Duration) handOverRun {
	send, end, err := handoverwire.NewPair()
	if err != nil {
		t.Fatal(err)
	}
	if side == nil {
		side = takeOver
	}
	h := handOverRun{send: send, sideDone: make(chan struct{})}
	handedOver := make(chan struct{})
	go func() {
		defer close(h.sideDone)
		defer end.Close()
		side(t, end, newP, handedOver)
	}()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.n, h.err = oldP.HandOver(ctx, send, HandOverOptions{Stall: stall, Acked: true, AckEach: true})
	h.took = time.Since(start)
	close(handedOver)
	t.Logf("HandOver: %d sent in %s: %v", h.n, h.took.Round(time.Millisecond), h.err)
	return h
}

// armVictim sets the seam that strikes v at step, when the victim's session
// gets there (found by its client's address); relaying and handed over are
// struck by the test itself.
func armVictim(t *testing.T, step faultStep, v *victim) {
	mine := v.client.LocalAddr().String()
	switch step {
	case atDetached:
		seam.Set(t, &testHookHandOverSend, func(client *os.File) {
			if peerOf(t, client) == mine {
				v.strike()
			}
		})
	case atOnItsWay:
		seam.Set(t, &testHookTakeOverAdopt, func(_ int64, files []*os.File) {
			if len(files) > 0 && peerOf(t, files[0]) == mine {
				v.strike()
			}
		})
	case atAdopted:
		var mu sync.Mutex
		place := int64(-1)
		seam.Set(t, &testHookTakeOverAdopt, func(p int64, files []*os.File) {
			if len(files) > 0 && peerOf(t, files[0]) == mine {
				mu.Lock()
				place = p
				mu.Unlock()
			}
		})
		seam.Set(t, &testHookTakeOverAdopted, func(p int64, _ error) {
			mu.Lock()
			defer mu.Unlock()
			if p == place {
				v.strike()
			}
		})
	}
}

// TestSecondUpgradeWhileTakingOver: a live upgrade of the new process
// while it still takes over the old one's sessions (a second SIGUSR2) is
// refused at once, and changes nothing: the take-over goes on, and every
// session arrives and relays.
func TestSecondUpgradeWhileTakingOver(t *testing.T) {
	const sessions = 3
	be := echoListener(t)
	oldP, addr := startProxy(t, rawConfig(be))
	newP, _ := startProxy(t, rawConfig(be))
	conns := rawSessions(t, addr, sessions)
	var once sync.Once
	refused := make(chan error, 1)
	seam.Set(t, &testHookTakeOverAdopt, func(int64, []*os.File) {
		once.Do(func() {
			send, _ := handoverPair(t)
			_, err := newP.HandOver(context.Background(), send, HandOverOptions{Stall: time.Minute, Acked: true, AckEach: true})
			refused <- err
		})
	})
	if got := handOver(t, oldP, newP); got != sessions {
		t.Fatalf("handed over %d sessions, want %d", got, sessions)
	}
	if err := <-refused; !errors.Is(err, ErrTakingOver) {
		t.Fatalf("a hand-over while taking over: %v, want ErrTakingOver", err)
	}
	if got := relaying(conns, 5*time.Second); got != sessions {
		t.Fatalf("%d of %d sessions relay on the new proxy", got, sessions)
	}
	waitStats(t, newP, "every session on the new proxy", func(st proxymetrics.Stats) bool { return st.Active == sessions })
	if newP.TakingOver() {
		t.Fatal("the new proxy still says it takes over after TakeOver returned")
	}
}

// TestHandOverFindsTheListenerByAddress: a session keeps the listener that
// accepted it across a hand-over to a process whose listeners have other
// indices (a reload here removed one; its configuration orders them
// otherwise).
func TestHandOverFindsTheListenerByAddress(t *testing.T) {
	a, b := namedBackend(t, "a"), namedBackend(t, "b")
	first, second, third := freeAddr(t), freeAddr(t), freeAddr(t)
	text := func(listeners ...string) string {
		var ls []string
		for _, l := range listeners {
			ls = append(ls, fmt.Sprintf(`{listen: %q, mode: raw, group: %s}`, l, map[string]string{first: "ga", second: "gb", third: "ga"}[l]))
		}
		return twoGroups(a, b)(strings.Join(ls, ", ")) + "reuse_port: true\n"
	}
	oldP, _ := startProxy(t, text(first, second, third))
	cfg, err := testParseConfig(t, text(first, third))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Loops = 2
	if err := oldP.Reload(cfg); err != nil { // third keeps its index, 2
		t.Fatal(err)
	}
	c, r, name := greetedBy(t, third)
	if name != "a" {
		t.Fatalf("a session on %s reached %s, want a", third, name)
	}
	// Started only now: it shares the addresses (reuse_port), and would
	// accept sessions itself.
	newP, _ := startProxy(t, text(third, first)) // third is at index 0 there
	if n := handOver(t, oldP, newP); n != 1 {
		t.Fatalf("handed over %d sessions, want 1", n)
	}
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadString('\n'); err != nil || got != "ping\n" {
		t.Fatalf("echo after the hand-over: %q, %v", got, err)
	}
	listens := map[string]bool{}
	var mu sync.Mutex
	eachSession(newP, func(s *session) {
		mu.Lock()
		listens[s.listenerCfg().Listen] = true
		mu.Unlock()
	})
	if !listens[third] || len(listens) != 1 {
		t.Fatalf("the handed-over session is on listeners %v, want %s", listens, third)
	}
}
