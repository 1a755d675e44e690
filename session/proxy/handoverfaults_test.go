package proxy

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/seam"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/handoverwire"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// A live upgrade's faults, step by step, in one process: the old proxy
// hands its sessions over a socket pair to what plays the new process, a
// real proxy's TakeOver or a stand-in that misbehaves. For each (step,
// fault): HandOver returns within its stall bound; every session either
// relays, on exactly one of the two proxies, or is gone because its own
// peer left or the process it was sent to went away; and the descriptors
// held are those of the sessions left, nothing more. docs/live-upgrade.md
// lists these with the other fault tests.

// newSide plays the new process on its end of the hand-over socket: it
// returns once it is done.
type newSide func(t *testing.T, end *os.File, newP *Proxy)

// takeOver is the well-behaved new process.
func takeOver(t *testing.T, end *os.File, newP *Proxy) {
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
// new process killed part way.
func dies(first int) newSide {
	return func(t *testing.T, end *os.File, _ *Proxy) {
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

// answersGarbage reads some of the first message and writes back bytes
// that are no message (a length over the bound), then reads until the old
// process ends the socket.
func answersGarbage(t *testing.T, end *os.File, _ *Proxy) {
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

// resetBeforeAdoption resets every connection of conns once, just before
// the new process adopts its first session: their sessions are on their way.
func resetBeforeAdoption(t *testing.T, conns []net.Conn) {
	var once sync.Once
	seam.Set(t, &testHookTakeOverAdopt, func() {
		once.Do(func() {
			for _, c := range conns {
				_ = c.(*net.TCPConn).SetLinger(0)
				c.Close()
			}
		})
	})
}

func TestHandOverFaults(t *testing.T) {
	const sessions, stall = 8, 500 * time.Millisecond
	for _, tc := range []struct {
		step, fault string
		side        newSide
		setup       func(t *testing.T, clients, backends []net.Conn)
		// mayLose says the fault may take sessions with it: those whose
		// client left, or that were sent to a process that went away.
		mayLose bool
		// fails says HandOver reports an error.
		fails bool
	}{
		{step: "all", fault: "none", side: takeOver},
		{step: "in flight", fault: "client reset", side: takeOver, mayLose: true,
			setup: func(t *testing.T, clients, _ []net.Conn) { resetBeforeAdoption(t, clients) }},
		{step: "in flight", fault: "backend reset", side: takeOver, mayLose: true,
			setup: func(t *testing.T, _, backends []net.Conn) { resetBeforeAdoption(t, backends) }},
		{step: "in flight", fault: "new process killed", side: dies(1), mayLose: true, fails: true},
		{step: "acknowledgement", fault: "new process answers garbage", side: answersGarbage, mayLose: true, fails: true},
	} {
		t.Run(tc.step+"/"+tc.fault, func(t *testing.T) {
			backends := make(chan net.Conn, sessions)
			be := testserver.Conns(t, func(c net.Conn) {
				backends <- c
				_, _ = io.Copy(c, c)
			})
			oldP, addr := startProxy(t, rawConfig(be))
			newP, _ := startProxy(t, rawConfig(be))
			held := reactor.HeldFDs()
			conns := rawSessions(t, addr, sessions)
			if tc.setup != nil {
				bs := make([]net.Conn, sessions)
				for i := range bs {
					bs[i] = <-backends
				}
				tc.setup(t, conns, bs)
			}
			send, end, err := handoverwire.NewPair()
			if err != nil {
				t.Fatal(err)
			}
			sideDone := make(chan struct{})
			go func() {
				defer close(sideDone)
				defer end.Close()
				tc.side(t, end, newP)
			}()
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			n, err := oldP.HandOver(ctx, send, HandOverOptions{Stall: stall, Acked: true})
			took := time.Since(start)
			send.Close()
			<-sideDone
			t.Logf("HandOver: %d sent in %s: %v", n, took.Round(time.Millisecond), err)
			if took > 4*stall+5*time.Second {
				t.Fatalf("HandOver took %s, past its stall bound of %s", took, stall)
			}
			if (err != nil) != tc.fails {
				t.Fatalf("HandOver: %v, want an error: %v", err, tc.fails)
			}
			if err != nil {
				oldP.Reactor().ResumeAccepting()
				oldP.HandOverLost()
			}
			kept := relaying(conns, 2*time.Second)
			if !tc.mayLose && kept != sessions {
				t.Fatalf("%d of %d sessions relay after the hand-over", kept, sessions)
			}
			// Every session relays on one proxy only, and what is gone is
			// gone from both.
			waitStats(t, oldP, "the old proxy to keep only the sessions that relay", func(st proxymetrics.Stats) bool {
				return st.Active+newP.Stats().Active == int64(kept)
			})
			waitfor.Value(t, "the descriptors held to be the sessions' own", reactor.HeldFDs,
				func(h int64) bool { return h == held+int64(kept*fdsPerHandedSession) })
		})
	}
}
