package reactor

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/tidegate/tidegate/internal/testkit/seam"
	"github.com/tidegate/tidegate/internal/testkit/sockpair"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor/adopt"
	"github.com/tidegate/tidegate/reactor/fdbudget"
)

// TestAddListenerRacingStop: a listener that a reload adds while the server
// stops (Stop for SIGTERM's end, Shutdown for its drain, ReleaseListeners for
// a live upgrade) is either refused or closed with the others: the stop
// returns in time, nothing panics, and no socket is left listening.
func TestAddListenerRacingStop(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(s *Server) error
	}{
		{"Stop", func(s *Server) error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return s.Stop(ctx)
		}},
		{"Shutdown", func(s *Server) error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return s.Shutdown(ctx)
		}},
		{"ReleaseListeners", func(s *Server) error { s.ReleaseListeners(); return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := startServer(t, Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1}, &echoHandler{})
			stopped := make(chan error, 1)
			seam.Set(t, &testHookListenerBound, func() {
				go func() { stopped <- tc.stop(s) }()
				// Unfixed, the stop closes stopAccept meanwhile and goes on;
				// fixed, it waits for AddListener, and this wait runs out.
				select {
				case <-s.accept.Stopped():
				case <-time.After(300 * time.Millisecond):
				}
			})
			idx, addErr := s.AddListener("tcp://127.0.0.1:0")
			var addr net.Addr
			if addErr == nil {
				var err error
				if addr, err = s.Addr(idx); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case err := <-stopped:
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s did not return", tc.name)
			}
			if addErr != nil {
				return // refused: nothing was opened
			}
			if c, err := net.DialTimeout("tcp", addr.String(), time.Second); err == nil {
				c.Close()
				t.Fatalf("the listener added while the server stopped still listens on %s", addr)
			}
		})
	}
}

// resetSocket returns this side of a loopback TCP connection whose peer has
// reset it, as a handed-over socket can be by the time it is adopted.
func resetSocket(t *testing.T) net.Conn {
	t.Helper()
	peer, mine := sockpair.TCP(t)
	sockpair.Reset(t, peer, mine)
	f, err := mine.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	nc, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// TestAdoptingAResetSocketFails: a socket whose peer reset it before it was
// adopted is refused by Loop.Adopt, Loop.AdoptPair and Server.Adopt (gnet
// cannot register a socket without a peer address), and its MaxConns slot
// and descriptors are given back; the other socket of a pair is closed.
func TestAdoptingAResetSocketFails(t *testing.T) {
	h := &echoHandler{}
	s, addr := startServer(t, Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1}, h)
	c := dial(t, addr)
	if err := echoOnce(c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	loop := s.Loops()[0]
	// The accept settles after OnOpen, and gives its extra descriptor back then.
	waitfor.For(t, "the accept to be settled", func() bool { return s.enrolling.Load() == 0 })
	open, held := s.acceptedOpen.Load(), fdbudget.Held()
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s of a reset socket reported success", what)
		}
		if o, hd := s.acceptedOpen.Load(), fdbudget.Held(); o != open || hd != held {
			t.Fatalf("after a failed %s: %d accepted open and %d descriptors held, want %d and %d", what, o, hd, open, held)
		}
	}
	_, err := loop.Adopt(resetSocket(t), h, nil, 0)
	check("Loop.Adopt", err)
	_, err = s.Adopt(resetSocket(t), h, nil, 0)
	check("Server.Adopt", err)

	live, peer := sockpair.TCP(t)
	_, _, err = loop.AdoptPair(resetSocket(t), live, h, h, nil, 0, -1)
	live.Close()
	check("Loop.AdoptPair", err)
	sockpair.ExpectEnded(t, peer, "the other socket of a pair that failed")
	if err := echoOnce(c, 5*time.Second); err != nil {
		t.Fatalf("the loop after the failed adoptions: %v", err)
	}
}

// TestEnrollGnetDidNotOpenGivesBackItsDescriptors: gnet v2.9.7 reports an
// enroll whose epoll_ctl ADD failed as a success, and one whose worker
// panicked as a result channel closed empty; OnOpen never ran for either.
// Settling them gives back every descriptor the accept held for them.
func TestEnrollGnetDidNotOpenGivesBackItsDescriptors(t *testing.T) {
	s, _ := startServer(t, Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1, FDsPerConn: 2}, &echoHandler{})
	held := fdbudget.Held()
	for _, closeEmpty := range []bool{false, true} {
		res := make(chan gnet.RegisteredResult, 1)
		if closeEmpty {
			close(res)
		} else {
			res <- gnet.RegisteredResult{} // no error, and no OnOpen
		}
		// What listener.enroll does before it hands the result over.
		s.enrolling.Add(1)
		holdFDs(s.cfg.FDsPerConn + 1)
		s.pendingEnrolls <- &enrollment{listener: 0, res: res}
		waitfor.For(t, "the enroll to be settled", func() bool { return s.enrolling.Load() == 0 })
		if h := fdbudget.Held(); h != held {
			t.Fatalf("after an enroll gnet did not open (closed empty: %v): %d descriptors held, want %d", closeEmpty, h, held)
		}
	}
}

// TestResumeAcceptingLogsNoAcceptError: an accept goroutine that goes round
// while ResumeAccepting runs does not take HoldAccepting's deadline for an
// accept error, and the server accepts again.
func TestResumeAcceptingLogsNoAcceptError(t *testing.T) {
	s, addr := startServer(t, Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1}, &echoHandler{})
	s.HoldAccepting()
	seam.Set(t, &testHookResumeAccepting, func() {
		// Give the accept goroutine a few rounds here (ten of the
		// acceptor's 50 ms admission rechecks), and stop as soon as it
		// counts an error.
		deadline := time.Now().Add(500 * time.Millisecond)
		for len(s.accept.Errors()) == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	})
	s.ResumeAccepting()
	if errs := s.accept.Errors(); len(errs) > 0 {
		t.Fatalf("resuming counted accept errors: %v", errs)
	}
	if err := echoOnce(dial(t, addr), 5*time.Second); err != nil {
		t.Fatalf("after ResumeAccepting: %v", err)
	}
}

// TestDrainWaitsForAnAdoptionUnderWay: a drain (Shutdown, a SIGTERM to a
// live upgrade's new process) that finds nothing open while a connection
// is being adopted waits for it, and the connection is then open like any
// other: the drain lets it run until it ends. Taking the server for idle
// stopped the loops as the registration ended and cut the connection,
// which the process it came from had let go. An adoption that starts once
// the drain has found the server idle is refused, its socket left to the
// caller. The adoption is held under way by its loop, busy in a task, so
// that gnet's registration waits for it.
func TestDrainWaitsForAnAdoptionUnderWay(t *testing.T) {
	h := &echoHandler{}
	s, addr := startServer(t, Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1}, h)
	c := dial(t, addr) // for the loop to be known
	if err := echoOnce(c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	c.Close()
	waitfor.For(t, "nothing open", func() bool { return s.OpenConns() == 0 && s.enrolling.Load() == 0 })
	loop := s.Loops()[0]
	busy, release := make(chan struct{}), make(chan struct{})
	if err := loop.Execute(func() { close(busy); <-release }); err != nil {
		t.Fatal(err)
	}
	<-busy
	nc, peer := sockpair.TCP(t)
	type result struct {
		c   *Conn
		err error
	}
	adopted := make(chan result, 1)
	go func() {
		ac, err := loop.Adopt(nc, h, nil, 0)
		nc.Close()
		adopted <- result{ac, err}
	}()
	waitfor.For(t, "the adoption to be under way", func() bool { return s.adoptions.UnderWay() == 1 })
	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		drained <- s.Shutdown(ctx)
	}()
	waitfor.For(t, "the drain to start", func() bool { return s.Health().Draining })
	close(release)
	r := <-adopted
	if r.err != nil {
		t.Fatalf("the adoption under way as the drain started: %v", r.err)
	}
	if err := echoOnce(peer, 5*time.Second); err != nil {
		t.Fatalf("the connection adopted during the drain: %v, want it open until it ends", err)
	}
	// A drain that took the server for idle called Stop at once, before
	// the loop was let go.
	if s.stopping.Load() {
		t.Fatal("the drain stops the server with an adopted connection open")
	}
	select {
	case err := <-drained:
		t.Fatalf("the drain ended with a connection open: %v", err)
	default:
	}
	peer.Close()
	select {
	case err := <-drained:
		if err != nil {
			t.Fatalf("the drain after the adopted connection ended: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the drain did not end after the adopted connection did")
	}
	late, _ := sockpair.TCP(t)
	if _, err := s.Adopt(late, h, nil, 0); !errors.Is(err, adopt.ErrStopping) {
		t.Fatalf("an adoption after the drain found nothing open: %v, want ErrStopping", err)
	}
	late.Close()
}
