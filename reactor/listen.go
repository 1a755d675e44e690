package reactor

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"

	"github.com/tidegate/tidegate/reactor/acceptor"
	"github.com/tidegate/tidegate/reactor/fdbudget"

	"github.com/panjf2000/gnet/v2"
)

// The Server owns its listening sockets (package acceptor runs them):
// gnet never sees them, so an accept error cannot end gnet's engine (see
// gnetReliances). What the accept goroutines ask of the server is here:
// whether one more connection may be accepted, and its hand-over to a loop.

// acceptHooks is the Server as its listeners see it (acceptor.Server).
type acceptHooks Server

// Admit reports whether one more connection may be accepted now, and if
// not, why.
func (h *acceptHooks) Admit() acceptor.State {
	s := (*Server)(h)
	open := s.acceptedOpen.Load() + s.enrolling.Load()
	if s.cfg.MaxConns > 0 && open >= int64(s.cfg.MaxConns) {
		return acceptor.AtMaxConns
	}
	// While gnet enrolls a connection it holds two descriptors for it.
	if !fdbudget.Room(s.cfg.FDsPerConn+1, s.cfg.FDReserve) {
		return acceptor.AtFDBudget
	}
	return acceptor.Running
}

// Open returns the accepted connections open, for the accept logs.
func (h *acceptHooks) Open() int64 { return h.acceptedOpen.Load() }

// Enroll hands a connection accepted on listener to the least loaded event
// loop. gnet duplicates the descriptor, registers the duplicate on the loop
// (OnOpen runs there) and closes the original.
func (h *acceptHooks) Enroll(nc net.Conn, listener int) {
	s := (*Server)(h)
	if tc, ok := nc.(*net.TCPConn); ok && s.cfg.Nagle {
		_ = tc.SetNoDelay(false)
	}
	s.enrolling.Add(1)
	holdFDs(s.cfg.FDsPerConn + 1)
	e := &enrollment{listener: listener}
	ctx := gnet.NewContext(gnet.NewNetConnContext(context.Background(), nc), e)
	res, err := s.engine.Register(ctx)
	if err != nil {
		_ = nc.Close()
		s.enrolled(err)
		return
	}
	e.res = res
	s.pendingEnrolls <- e
}

// holdFDs accounts n descriptors to connections (negative n releases them).
func holdFDs(n int) { fdbudget.Hold(n) }

// enrollment is one accepted connection on its way to a loop, and gnet's
// registration context for it.
type enrollment struct {
	listener int // the index of the listener that accepted it
	res      <-chan gnet.RegisteredResult
	opened   atomic.Bool // OnOpen ran: the connection's descriptors are its own now
}

// errNotOpened is an enroll gnet reported done although OnOpen never ran:
// gnet v2.9.7 reports success when epoll_ctl ADD fails (it closes the
// socket), and its enroll worker closes the result channel empty when it
// panics.
var errNotOpened = errors.New("reactor: gnet registered the connection without opening it")

// settle returns the outcome of e once gnet has reported it.
func (e *enrollment) settle(r gnet.RegisteredResult, ok bool) error {
	switch {
	case r.Err != nil:
		return r.Err
	case !ok || !e.opened.Load():
		return errNotOpened
	}
	return nil
}

// enrolled settles one enroll: err is why it failed, if it did, and then
// the descriptors it held for its handler are given back too.
func (s *Server) enrolled(err error) {
	s.enrolling.Add(-1)
	holdFDs(-1) // gnet closed the original descriptor
	if err != nil {
		holdFDs(-s.cfg.FDsPerConn)
		s.accept.Failed(err)
	}
	s.accept.Wake()
}

// settleEnrolls waits for the result of every enroll in order, until the
// server stops accepting and every pending one has been settled.
func (s *Server) settleEnrolls() {
	defer s.settleWG.Done()
	for e := range s.pendingEnrolls {
		select {
		case r, ok := <-e.res:
			s.enrolled(e.settle(r, ok))
		case <-s.done:
			// The engine ended: gnet will not finish the registration.
			s.enrolled(nil)
		}
	}
}

// testHookListenerBound, when a test sets it, runs in AddListener once the
// new listener is bound and before it accepts: a seam for what arrives then.
var testHookListenerBound func()

// AddListener binds addr (as in Config.Addrs) and accepts on it, on a
// running server, under the same limits as the others. It returns the new
// listener's index, which Conn.Listener reports for its connections.
func (s *Server) AddListener(addr string) (int, error) {
	i, err := s.OpenListener(addr)
	if err != nil {
		return 0, err
	}
	if testHookListenerBound != nil {
		testHookListenerBound()
	}
	if err := s.StartListener(i); err != nil {
		return 0, err
	}
	return i, nil
}

// OpenListener binds addr as AddListener does, but does not accept on it
// until StartListener: connections wait in its backlog meanwhile, so that
// the caller can get ready for them (a reload stores the configuration that
// routes them). RemoveListener closes it.
func (s *Server) OpenListener(addr string) (int, error) { return s.accept.Open(addr) }

// StartListener starts accepting on listener i, opened by OpenListener.
func (s *Server) StartListener(i int) error { return s.accept.StartListener(i) }

// RemoveListener stops accepting on listener i: it takes what the kernel has
// already completed in its backlog, then closes it. Connections it accepted
// go on.
func (s *Server) RemoveListener(i int) error { return s.accept.Remove(i) }

// Addr returns the bound address of the i-th listen address, which tells the
// port chosen for ":0".
func (s *Server) Addr(i int) (net.Addr, error) { return s.accept.Addr(i) }

// ListenerFiles returns a duplicate of each listening socket, by listener
// index (see Conn.Listener), for another process to listen on
// (Config.Listeners). The caller closes them.
func (s *Server) ListenerFiles() (map[int]*os.File, error) { return s.accept.Files() }
