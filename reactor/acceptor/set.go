// Package acceptor runs the reactor's listening sockets: one accept
// goroutine per listener admits connections while the server is under its
// limits (Server.Admit) and hands each one to the server to register on an
// event loop (Server.Enroll). At a limit it stops calling accept, so new
// connections wait in the kernel's backlog, and it resumes when the server
// wakes it (Set.Wake). An accept error is counted by errno, logged at most
// once a second, and followed by a backoff; only a broken socket stops a
// listener. Listeners can be added and removed at run time, held while
// another process accepts on the same sockets, and drained of their backlog
// before they close.
package acceptor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Server is what the listeners ask of the server they accept for.
type Server interface {
	// Admit reports whether one more connection may be accepted now
	// (Running), or why not (AtMaxConns, AtFDBudget).
	Admit() State
	// Enroll hands nc, accepted on listener index, to an event loop.
	Enroll(nc net.Conn, index int)
	// Open returns how many accepted connections are open, for the logs.
	Open() int64
}

// Config is what a Set listens on, and how.
type Config struct {
	Addrs     []string       // listen addresses, "tcp://host:port" or "unix:///path" (tcp if no scheme)
	Listeners []net.Listener // sockets inherited for Addrs, by index; nil ones are bound
	ReusePort bool           // SO_REUSEPORT on the bound TCP sockets
	MaxConns  int            // the server's limit, for the logs
	Logger    zerolog.Logger
	// Hold, for tests, keeps every accept goroutine from calling Accept
	// until it is closed.
	Hold chan struct{}
}

// Set is the listening sockets of one server.
type Set struct {
	srv Server
	cfg Config

	mu       sync.Mutex  // serializes Open, Start, Remove and the end of accepting
	opened   []*Listener // as opened by Listen; see List for the current set
	lns      atomic.Pointer[[]*Listener]
	next     int           // index of the next listener added
	stop     chan struct{} // closed when accepting ends for good
	stopOnce sync.Once
	held     atomic.Bool    // Hold: another process accepts on the listeners
	wg       sync.WaitGroup // accept goroutines
	pauses   atomic.Int64
	errors   errnoCounter
	limited  rateLimitedLog
}

// NewSet returns the listeners of srv, not yet bound.
func NewSet(srv Server, cfg Config) *Set {
	s := &Set{srv: srv, cfg: cfg, stop: make(chan struct{})}
	s.limited.log = cfg.Logger
	return s
}

// Listen binds every configured address (or takes its inherited socket).
// It closes what it opened when one fails.
func (s *Set) Listen() error {
	for i, a := range s.cfg.Addrs {
		var l *Listener
		var err error
		if i < len(s.cfg.Listeners) && s.cfg.Listeners[i] != nil {
			l = s.newListener(i, s.cfg.Listeners[i])
		} else if l, err = s.listen(i, a); err != nil {
			s.closeAll()
			return err
		}
		s.opened = append(s.opened, l)
	}
	return nil
}

// listen binds the configured address a as listener index.
func (s *Set) listen(index int, a string) (*Listener, error) {
	network, addr := SplitAddr(a)
	network = BindNetwork(network, addr)
	// KeepAlive -1: Go would otherwise set four TCP keep-alive options on
	// every accepted socket (gnet's own accept set none), four system calls
	// per connection (benchmarks/results/2026-12-01-accept-cost.md).
	lc := net.ListenConfig{Control: s.listenControl, KeepAlive: -1}
	ln, err := lc.Listen(context.Background(), network, addr)
	if err != nil {
		return nil, listenError(a, addr, err)
	}
	return s.newListener(index, ln), nil
}

// SplitAddr returns the network and address of a configured listen address.
func SplitAddr(a string) (network, addr string) {
	if n, rest, ok := strings.Cut(a, "://"); ok {
		return n, rest
	}
	return "tcp", a
}

// listenError reports that listening on the configured address configured
// (addr without its scheme) failed with err. net's error names the address
// already ("listen tcp4 127.0.0.1:7300: bind: address already in use"); it is
// named again only when err does not.
func listenError(configured, addr string, err error) error {
	if strings.Contains(err.Error(), addr) {
		return fmt.Errorf("reactor: %w", err)
	}
	return fmt.Errorf("reactor: listen on %s: %w", configured, err)
}

// listenControl sets socket options on listening sockets before bind. Go
// already sets SO_REUSEADDR, so a restarted server binds at once even while
// the old one's connections are in TIME-WAIT.
func (s *Set) listenControl(network, _ string, rc syscall.RawConn) error {
	if !s.cfg.ReusePort || strings.HasPrefix(network, "unix") {
		return nil
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = setReusePort(int(fd)) }); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("SO_REUSEPORT: %w", serr)
	}
	return nil
}

// Start starts accepting on the listeners Listen opened.
func (s *Set) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lns.Store(&s.opened)
	s.next = len(s.opened)
	for _, l := range s.opened {
		l.start()
	}
}

// List returns the listeners accepting now (or, before Start, those opened).
func (s *Set) List() []*Listener {
	if p := s.lns.Load(); p != nil {
		return *p
	}
	return s.opened
}

// Addr returns the bound address of listener i.
func (s *Set) Addr(i int) (net.Addr, error) {
	for _, l := range s.List() {
		if l.index == i {
			return l.ln.Addr(), nil
		}
	}
	return nil, fmt.Errorf("reactor: no listener %d", i)
}

// Files returns a duplicate of each listening socket, by listener index.
// The caller closes them.
func (s *Set) Files() (map[int]*os.File, error) {
	files := map[int]*os.File{}
	fail := func(err error) (map[int]*os.File, error) {
		for _, f := range files {
			_ = f.Close()
		}
		return nil, err
	}
	for _, l := range s.List() {
		fl, ok := l.ln.(interface{ File() (*os.File, error) })
		if !ok {
			return fail(fmt.Errorf("reactor: listener %s cannot give its descriptor", l.addr))
		}
		f, err := fl.File()
		if err != nil {
			return fail(fmt.Errorf("reactor: duplicating listener %s: %w", l.addr, err))
		}
		files[l.index] = f
	}
	return files, nil
}

// Open binds addr on a started Set, but does not accept on it until
// StartListener: connections wait in its backlog meanwhile. It returns the
// new listener's index.
func (s *Set) Open(addr string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.canAdd(); err != nil {
		return 0, err
	}
	l, err := s.listen(s.next, addr)
	if err != nil {
		return 0, err
	}
	s.next++
	next := append(append([]*Listener(nil), s.List()...), l)
	s.lns.Store(&next)
	return l.index, nil
}

// StartListener starts accepting on listener i, opened by Open.
func (s *Set) StartListener(i int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.canAdd(); err != nil {
		return err
	}
	for _, l := range s.List() {
		if l.index != i {
			continue
		}
		if l.started {
			return fmt.Errorf("reactor: start listener %d: it accepts already", i)
		}
		l.start()
		return nil
	}
	return fmt.Errorf("reactor: start listener: no listener %d", i)
}

// canAdd reports why no listener can be added now; mu is held.
func (s *Set) canAdd() error {
	select {
	case <-s.stop:
		return errors.New("reactor: add listener: the server no longer accepts")
	default:
	}
	if s.lns.Load() == nil {
		return errors.New("reactor: add listener: the server is not started")
	}
	return nil
}

// Remove stops accepting on listener i: it takes what the kernel has
// already completed in its backlog, then closes it.
func (s *Set) Remove(i int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.List()
	var l *Listener
	next := make([]*Listener, 0, len(cur))
	for _, x := range cur {
		if x.index == i {
			l = x
		} else {
			next = append(next, x)
		}
	}
	if l == nil {
		return fmt.Errorf("reactor: no listener %d", i)
	}
	s.lns.Store(&next)
	if l.started {
		l.stopAfterBacklog()
		<-l.done
	}
	return l.close()
}

// Wake tells paused listeners to look at the limits again.
func (s *Set) Wake() {
	for _, l := range s.List() {
		if l.current() != Running {
			l.poke()
		}
	}
}

// Pauses returns how many times a listener paused at a limit.
func (s *Set) Pauses() int64 { return s.pauses.Load() }

// Errors returns the accept errors so far, by errno name.
func (s *Set) Errors() map[string]int64 { return s.errors.snapshot() }

// Failed counts err, a failure to hand an accepted connection to a loop,
// with the accept errors, and logs it (at most once a second).
func (s *Set) Failed(err error) {
	s.errors.count(err)
	s.limited.Warn().Err(err).Msg("handing an accepted connection to a loop failed: closed it")
}

// Stopped is closed when accepting has ended for good.
func (s *Set) Stopped() <-chan struct{} { return s.stop }

// Wait waits for every accept goroutine to return; accepting must have
// ended (Stop, StopAfterBacklog or Release).
func (s *Set) Wait() { s.wg.Wait() }

// Stop closes the listeners and ends the accept goroutines.
func (s *Set) Stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		close(s.stop)
		s.closeAll()
	})
}

// StopAfterBacklog is Stop for a drain: each accept goroutine first takes
// the connections the kernel has already completed in its listener's
// backlog (while the limits allow), since closing a listener resets those,
// although their clients may already be sending. It returns once every
// listener is closed.
func (s *Set) StopAfterBacklog() {
	s.stopOnce.Do(func() {
		s.end(func(lns []*Listener) {
			for _, l := range lns {
				l.stopAfterBacklog()
			}
		})
		s.wg.Wait()
		s.closeAll()
	})
}

// end ends accepting for good under mu, so that Open and StartListener
// either ran before, and their listener is among those the caller then
// stops and closes, or run after and refuse: a listener added as the server
// stops would otherwise start an accept goroutine after Wait began (which
// never returns then) or after the server stopped taking enrolls, or stay
// open. before runs under the lock first.
func (s *Set) end(before func(lns []*Listener)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if before != nil {
		before(s.List())
	}
	close(s.stop)
}

func (s *Set) closeAll() {
	for _, l := range s.List() {
		_ = l.close()
	}
}

// Hold stops accepting without closing the listeners, for while another
// process accepts on the same sockets: connections in the backlog are left
// to it. It returns once every accept goroutine is parked (or a second has
// passed): a connection an Accept under way took meanwhile is enrolled, one
// that arrives after is not.
func (s *Set) Hold() {
	s.held.Store(true)
	lns := s.List()
	for _, l := range lns {
		l.setDeadline(time.Now()) // ends a blocked Accept
	}
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		parked := true
		for _, l := range lns {
			if l.alive.Load() && l.current() != Held {
				parked = false
			}
		}
		if parked {
			return
		}
	}
}

// Resume undoes Hold. The deadline that ended the held Accepts goes first:
// an accept goroutine that saw the hold end with the deadline still set
// would take its timeout for an accept error. between, if not nil, runs
// between the two steps (a seam for tests).
func (s *Set) Resume(between func()) {
	lns := s.List()
	for _, l := range lns {
		l.setDeadline(time.Time{})
	}
	if between != nil {
		between()
	}
	s.held.Store(false)
	for _, l := range lns {
		l.setDeadline(time.Time{}) // wakes them now that the hold is off
	}
}

// Release holds the listeners and then closes them for good without taking
// their backlog, which another process accepting on the same sockets
// serves.
func (s *Set) Release() {
	s.Hold()
	s.stopOnce.Do(func() {
		s.end(nil)
		s.wg.Wait()
		s.closeAll()
	})
}
