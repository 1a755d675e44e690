package acceptor

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidegate/tidegate/reactor/fdbudget"
)

// State says why a listener is or is not accepting.
type State int32

// The states of a listener; Server.Admit answers with the first three.
const (
	Running    State = iota // accepting
	AtMaxConns              // paused: MaxConns connections are open
	AtFDBudget              // paused: descriptors would pass the budget
	Backoff                 // paused for a moment after a resource error
	Stopped                 // closed
	Held                    // held: another process accepts on the same socket (Set.Hold)
)

var stateNames = [...]string{"accepting", "paused_max_conns", "paused_fd_budget", "backoff", "stopped", "held"}

// String returns the name Health reports for st.
func (st State) String() string { return stateNames[st] }

// Bounds of accept backoff after an error such as EMFILE.
const (
	backoffMin = 5 * time.Millisecond
	backoffMax = time.Second
	// admissionRecheck bounds how long a paused listener waits before it looks
	// at the limits again without a wake-up.
	admissionRecheck = 50 * time.Millisecond
)

// Listener is one listening socket that tidegate owns. Its accept goroutine
// admits connections while the server is under its limits and hands each
// one to the server to enroll on an event loop; gnet never sees the
// listening socket, so an accept error cannot end gnet's engine (gnet ends
// it on any accept error but EAGAIN, EINTR, ECONNRESET and ECONNABORTED,
// EMFILE included: see the reactor's gnetReliances).
type Listener struct {
	set   *Set
	index int
	addr  string // the bound address, for logs
	ln    net.Listener

	started     bool          // its accept goroutine was started; guarded by Set.mu
	wake        chan struct{} // a connection closed or an enroll finished: check the limits again
	alive       atomic.Bool   // the accept goroutine runs
	takeBacklog atomic.Bool   // draining: take what the backlog holds, then stop
	done        chan struct{} // closed when the accept goroutine returns
	state       atomic.Int32  // State
	err         atomic.Pointer[string]
}

func (s *Set) newListener(index int, ln net.Listener) *Listener {
	return &Listener{set: s, index: index, addr: ln.Addr().String(), ln: ln, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Net returns the listening socket.
func (l *Listener) Net() net.Listener { return l.ln }

// current returns why the listener is or is not accepting now.
func (l *Listener) current() State { return State(l.state.Load()) }

// start runs l's accept goroutine; Set.mu is held.
func (l *Listener) start() {
	l.started = true
	l.alive.Store(true)
	l.set.wg.Add(1)
	go l.accept()
}

// close closes l's socket for good.
func (l *Listener) close() error {
	l.state.Store(int32(Stopped))
	return l.ln.Close()
}

// stopAfterBacklog tells l's accept goroutine to take what the backlog
// holds and return, even from a blocked Accept or a wait at the limits.
func (l *Listener) stopAfterBacklog() {
	l.takeBacklog.Store(true)
	l.setDeadline(time.Now()) // ends a blocked Accept
}

// setDeadline sets the deadline of l's Accept and wakes its goroutine.
func (l *Listener) setDeadline(t time.Time) {
	if d, ok := l.ln.(deadliner); ok {
		_ = d.SetDeadline(t)
	}
	l.poke()
}

// poke wakes l's goroutine to look at the limits again.
func (l *Listener) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// accept runs the listener's accept goroutine until the listener is closed.
func (l *Listener) accept() {
	s := l.set
	defer s.wg.Done()
	defer close(l.done)
	defer l.alive.Store(false)
	recheck := time.NewTimer(admissionRecheck)
	defer recheck.Stop()
	backoff := time.Duration(0)
	for {
		if l.takeBacklog.Load() {
			l.acceptBacklog()
			return
		}
		if s.held.Load() {
			l.setState(Held)
			if !l.wait(recheck, admissionRecheck) {
				return
			}
			continue
		}
		if st := s.srv.Admit(); st != Running {
			l.setState(st)
			if !l.wait(recheck, admissionRecheck) {
				return
			}
			continue
		}
		if h := s.cfg.Hold; h != nil {
			select {
			case <-h:
			case <-s.stop:
			}
		}
		l.setState(Running) // Set.Hold waits for this to become Held
		nc, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if l.takeBacklog.Load() {
				l.acceptBacklog()
				return
			}
			if s.held.Load() {
				continue // Set.Hold's deadline ended the Accept
			}
			s.errors.count(err)
			if !isTemporaryAcceptError(err) {
				// Not a resource shortage: the listener itself failed.
				msg := err.Error()
				l.err.Store(&msg)
				s.cfg.Logger.Error().Str("listen", l.addr).Err(err).Msg("listener failed: no longer accepting")
				return
			}
			backoff = min(max(2*backoff, backoffMin), backoffMax)
			s.limited.Warn().Str("listen", l.addr).Err(err).Dur("backoff", backoff).
				Int64("open", s.srv.Open()).Msg("accept failed: backing off, connections wait in the backlog")
			l.setState(Backoff)
			if !l.wait(recheck, backoff) {
				return
			}
			continue
		}
		backoff = 0
		s.srv.Enroll(nc, l.index)
	}
}

// backlogWait is how long acceptBacklog waits for one more connection: it
// only needs the kernel to hand over what it queued already.
const backlogWait = 10 * time.Millisecond

// deadliner is a listener whose Accept can be given a deadline.
type deadliner interface{ SetDeadline(time.Time) error }

// acceptBacklog takes the connections already queued on the listener, while
// the limits allow, until the queue is empty.
func (l *Listener) acceptBacklog() {
	d, ok := l.ln.(deadliner)
	if !ok {
		return
	}
	n := 0
	for l.set.srv.Admit() == Running {
		if d.SetDeadline(time.Now().Add(backlogWait)) != nil {
			break
		}
		nc, err := l.ln.Accept()
		if err != nil {
			break
		}
		l.set.srv.Enroll(nc, l.index)
		n++
	}
	if n > 0 {
		l.set.cfg.Logger.Info().Str("listen", l.addr).Int("accepted", n).
			Msg("draining: took the connections already in the backlog")
	}
}

// wait blocks until a wake-up, d passes, or the listener closes; it reports
// false when the listener is closed.
func (l *Listener) wait(t *time.Timer, d time.Duration) bool {
	t.Reset(d)
	select {
	case <-l.wake:
	case <-t.C:
	case <-l.set.stop:
		return false
	}
	return !l.takeBacklog.Load()
}

func (l *Listener) setState(st State) {
	old := State(l.state.Swap(int32(st)))
	if old == st {
		return
	}
	s := l.set
	switch {
	case st == AtMaxConns || st == AtFDBudget:
		s.pauses.Add(1)
		s.limited.Warn().Str("listen", l.addr).Str("reason", st.String()).
			Int64("open", s.srv.Open()).Int("max_conns", s.cfg.MaxConns).
			Int64("fd_limit", fdbudget.Limit()).Int64("fd_accounted", fdbudget.Accounted()).
			Msg("accepting paused: new connections wait in the kernel backlog")
	case st == Running && (old == AtMaxConns || old == AtFDBudget):
		s.limited.Info().Str("listen", l.addr).Int64("open", s.srv.Open()).Msg("accepting resumed")
	}
}

// Health is the state of one listening socket, as the server's Health
// reports it.
type Health struct {
	// Addr is the bound address.
	Addr string `json:"addr"`
	// Alive is true while its accept goroutine runs.
	Alive bool `json:"alive"`
	// State is accepting, paused_max_conns, paused_fd_budget, backoff,
	// stopped or held (State.String). A paused listener is alive: connections wait in the backlog.
	State string `json:"state"`
	// Err says why it stopped accepting, when it failed.
	Err string `json:"error,omitempty"`
}

// Health returns the state of each listener, in the order they were opened.
func (s *Set) Health() []Health {
	lns := s.List()
	hs := make([]Health, len(lns))
	for i, l := range lns {
		hs[i] = Health{Addr: l.ln.Addr().String(), Alive: l.alive.Load(), State: l.current().String()}
		if e := l.err.Load(); e != nil {
			hs[i].Err = *e
		}
	}
	return hs
}

// PauseStates returns the Health.State values of a listener that is alive
// but leaves new connections in the kernel's backlog: at MaxConns, at the
// descriptor budget, and backing off after an accept error.
func PauseStates() []string {
	return []string{AtMaxConns.String(), AtFDBudget.String(), Backoff.String()}
}

// isTemporaryAcceptError reports whether an accept error is a shortage that
// passes (descriptors, memory, buffers) rather than a broken listener.
func isTemporaryAcceptError(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return true // unknown: keep trying, with backoff
	}
	switch errno {
	case syscall.EBADF, syscall.EINVAL, syscall.ENOTSOCK, syscall.EOPNOTSUPP:
		return false
	}
	return true
}
