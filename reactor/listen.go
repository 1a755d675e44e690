package reactor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidegate/tidegate/reactor/fdbudget"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"
)

// listener is one listening socket that tidegate owns. Its accept goroutine
// admits connections while the server is under its limits and hands each one
// to an event loop; gnet never sees the listening socket, so an accept error
// cannot end gnet's engine (gnet ends it on any accept error but EAGAIN,
// EINTR, ECONNRESET and ECONNABORTED, EMFILE included: see gnetReliances).
type listener struct {
	srv   *Server
	index int
	addr  string // the bound address, for logs
	ln    net.Listener

	started     bool          // its accept goroutine was started; guarded by Server.lnMu
	wake        chan struct{} // a connection closed or an enroll finished: check the limits again
	alive       atomic.Bool   // the accept goroutine runs
	takeBacklog atomic.Bool   // draining: take what the backlog holds, then stop
	done        chan struct{} // closed when the accept goroutine returns
	state       atomic.Int32  // acceptState
	err         atomic.Pointer[string]
}

// acceptState says why a listener is or is not accepting.
type acceptState int32

const (
	acceptRunning    acceptState = iota // accepting
	acceptAtMaxConns                    // paused: MaxConns connections are open
	acceptAtFDBudget                    // paused: descriptors would pass the budget
	acceptBackoff                       // paused for a moment after a resource error
	acceptStopped                       // closed
	acceptHeld                          // held: another process accepts on the same socket (HoldAccepting)
)

var acceptStateNames = [...]string{"accepting", "paused_max_conns", "paused_fd_budget", "backoff", "stopped", "held"}

func (a acceptState) String() string { return acceptStateNames[a] }

// Bounds of accept backoff after an error such as EMFILE.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
	// admissionRecheck bounds how long a paused listener waits before it looks
	// at the limits again without a wake-up.
	admissionRecheck = 50 * time.Millisecond
)

// splitAddr returns the network and address of a configured listen address.
func splitAddr(a string) (network, addr string) {
	if n, rest, ok := strings.Cut(a, "://"); ok {
		return n, rest
	}
	return "tcp", a
}

// openListeners binds every configured address. It closes what it opened
// when one fails.
func (s *Server) openListeners() error {
	for i, a := range s.cfg.Addrs {
		var l *listener
		var err error
		if i < len(s.cfg.Listeners) && s.cfg.Listeners[i] != nil {
			l = s.newListener(i, s.cfg.Listeners[i])
		} else if l, err = s.listen(i, a); err != nil {
			s.closeListeners()
			return err
		}
		s.listeners = append(s.listeners, l)
	}
	return nil
}

// listen binds the configured address a as listener index.
func (s *Server) listen(index int, a string) (*listener, error) {
	network, addr := splitAddr(a)
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

func (s *Server) newListener(index int, ln net.Listener) *listener {
	return &listener{srv: s, index: index, addr: ln.Addr().String(), ln: ln, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// stopAfterBacklog tells l's accept goroutine to take what the backlog
// holds and return, even from a blocked Accept or a wait at the limits.
func (l *listener) stopAfterBacklog() {
	l.takeBacklog.Store(true)
	l.setDeadline(time.Now()) // ends a blocked Accept
}

// setDeadline sets the deadline of l's Accept and wakes its goroutine.
func (l *listener) setDeadline(t time.Time) {
	if d, ok := l.ln.(deadliner); ok {
		_ = d.SetDeadline(t)
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// listenError reports that listening on the configured address configured
// (addr without its scheme) failed with err. net's error names the address
// already ("listen tcp 127.0.0.1:7300: bind: address already in use"); it is
// named again only when err does not.
func listenError(configured, addr string, err error) error {
	if strings.Contains(err.Error(), addr) {
		return fmt.Errorf("reactor: %w", err)
	}
	return fmt.Errorf("reactor: listen on %s: %w", configured, err)
}

func (s *Server) closeListeners() {
	for _, l := range s.lnList() {
		l.state.Store(int32(acceptStopped))
		_ = l.ln.Close()
	}
}

// listenControl sets socket options on listening sockets before bind. Go
// already sets SO_REUSEADDR, so a restarted server binds at once even while
// the old one's connections are in TIME-WAIT.
func (s *Server) listenControl(network, _ string, rc syscall.RawConn) error {
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

// wakeAcceptors tells paused listeners to look at the limits again.
func (s *Server) wakeAcceptors() {
	for _, l := range s.lnList() {
		if acceptState(l.state.Load()) != acceptRunning {
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	}
}

// admission reports whether one more connection may be accepted now, and
// if not, why.
func (s *Server) admission() acceptState {
	open := s.acceptedOpen.Load() + s.enrolling.Load()
	if s.cfg.MaxConns > 0 && open >= int64(s.cfg.MaxConns) {
		return acceptAtMaxConns
	}
	// While gnet enrolls a connection it holds two descriptors for it.
	if !fdbudget.Room(s.cfg.FDsPerConn+1, s.cfg.FDReserve) {
		return acceptAtFDBudget
	}
	return acceptRunning
}

// accept runs the listener's accept goroutine until the listener is closed.
func (l *listener) accept() {
	s := l.srv
	defer s.acceptWG.Done()
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
			l.setState(acceptHeld)
			if !l.wait(recheck, admissionRecheck) {
				return
			}
			continue
		}
		if st := s.admission(); st != acceptRunning {
			l.setState(st)
			if !l.wait(recheck, admissionRecheck) {
				return
			}
			continue
		}
		if h := s.cfg.holdAccept; h != nil {
			select {
			case <-h:
			case <-s.stopAccept:
			}
		}
		l.setState(acceptRunning) // HoldAccepting waits for this to become acceptHeld
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
				continue // HoldAccepting's deadline ended the Accept
			}
			s.acceptErrors.count(err)
			if !isTemporaryAcceptError(err) {
				// Not a resource shortage: the listener itself failed.
				msg := err.Error()
				l.err.Store(&msg)
				s.log.Error().Str("listen", l.addr).Err(err).Msg("listener failed: no longer accepting")
				return
			}
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			s.acceptLog.Warn().Str("listen", l.addr).Err(err).Dur("backoff", backoff).
				Int64("open", s.acceptedOpen.Load()).Msg("accept failed: backing off, connections wait in the backlog")
			l.setState(acceptBackoff)
			if !l.wait(recheck, backoff) {
				return
			}
			continue
		}
		backoff = 0
		l.enroll(nc)
	}
}

// backlogWait is how long acceptBacklog waits for one more connection: it
// only needs the kernel to hand over what it queued already.
const backlogWait = 10 * time.Millisecond

// deadliner is a listener whose Accept can be given a deadline.
type deadliner interface{ SetDeadline(time.Time) error }

// acceptBacklog takes the connections already queued on the listener, while
// the limits allow, until the queue is empty.
func (l *listener) acceptBacklog() {
	d, ok := l.ln.(deadliner)
	if !ok {
		return
	}
	n := 0
	for l.srv.admission() == acceptRunning {
		if d.SetDeadline(time.Now().Add(backlogWait)) != nil {
			break
		}
		nc, err := l.ln.Accept()
		if err != nil {
			break
		}
		l.enroll(nc)
		n++
	}
	if n > 0 {
		l.srv.log.Info().Str("listen", l.addr).Int("accepted", n).
			Msg("draining: took the connections already in the backlog")
	}
}

// holdFDs accounts n descriptors to connections (negative n releases them).
func holdFDs(n int) { fdbudget.Hold(n) }

// wait blocks until a wake-up, d passes, or the listener closes; it reports
// false when the listener is closed.
func (l *listener) wait(t *time.Timer, d time.Duration) bool {
	t.Reset(d)
	select {
	case <-l.wake:
	case <-t.C:
	case <-l.srv.stopAccept:
		return false
	}
	return !l.takeBacklog.Load()
}

func (l *listener) setState(st acceptState) {
	old := acceptState(l.state.Swap(int32(st)))
	if old == st {
		return
	}
	s := l.srv
	switch {
	case st == acceptAtMaxConns || st == acceptAtFDBudget:
		s.acceptPauses.Add(1)
		s.acceptLog.Warn().Str("listen", l.addr).Str("reason", st.String()).
			Int64("open", s.acceptedOpen.Load()).Int("max_conns", s.cfg.MaxConns).
			Int64("fd_limit", fdbudget.Limit()).Int64("fd_accounted", fdbudget.Accounted()).
			Msg("accepting paused: new connections wait in the kernel backlog")
	case st == acceptRunning && (old == acceptAtMaxConns || old == acceptAtFDBudget):
		s.acceptLog.Info().Str("listen", l.addr).Int64("open", s.acceptedOpen.Load()).Msg("accepting resumed")
	}
}

// enroll hands an accepted connection to the least loaded event loop. gnet
// duplicates the descriptor, registers the duplicate on the loop (OnOpen runs
// there) and closes the original.
func (l *listener) enroll(nc net.Conn) {
	s := l.srv
	if tc, ok := nc.(*net.TCPConn); ok && s.cfg.Nagle {
		_ = tc.SetNoDelay(false)
	}
	s.enrolling.Add(1)
	holdFDs(s.cfg.FDsPerConn + 1)
	e := &enrollment{l: l}
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

// enrollment is one accepted connection on its way to a loop, and gnet's
// registration context for it.
type enrollment struct {
	l      *listener
	res    <-chan gnet.RegisteredResult
	opened atomic.Bool // OnOpen ran: the connection's descriptors are its own now
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
		s.acceptErrors.count(err)
		s.acceptLog.Warn().Err(err).Msg("handing an accepted connection to a loop failed: closed it")
	}
	s.wakeAcceptors()
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

// errnoCounter counts errors by errno name, and logs at most once a second.
type errnoCounter struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (e *errnoCounter) count(err error) {
	name := errnoName(err)
	e.mu.Lock()
	if e.counts == nil {
		e.counts = map[string]int64{}
	}
	e.counts[name]++
	e.mu.Unlock()
}

func (e *errnoCounter) snapshot() map[string]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int64, len(e.counts))
	for k, v := range e.counts {
		out[k] = v
	}
	return out
}

// errnoName names the errno inside err (EMFILE, ENFILE, ...), or "other".
func errnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if n := errnoNames[errno]; n != "" {
			return n
		}
		return fmt.Sprintf("errno_%d", int(errno))
	}
	return "other"
}

var errnoNames = map[syscall.Errno]string{
	syscall.EMFILE:       "EMFILE",
	syscall.ENFILE:       "ENFILE",
	syscall.ENOBUFS:      "ENOBUFS",
	syscall.ENOMEM:       "ENOMEM",
	syscall.EPERM:        "EPERM",
	syscall.EPROTO:       "EPROTO",
	syscall.ECONNABORTED: "ECONNABORTED",
	syscall.ECONNRESET:   "ECONNRESET",
	syscall.EINVAL:       "EINVAL",
	syscall.EBADF:        "EBADF",
	syscall.ENOTSOCK:     "ENOTSOCK",
	syscall.EOPNOTSUPP:   "EOPNOTSUPP",
}

// rateLimitedLog passes at most one event a second to its logger; how many
// were held back is added to the next one.
type rateLimitedLog struct {
	log        zerolog.Logger
	last       atomic.Int64 // unix nanoseconds of the last event passed
	suppressed atomic.Int64
}

// Warn returns an event at warn level, or nil (which zerolog ignores) when
// an event passed less than a second ago.
func (r *rateLimitedLog) Warn() *zerolog.Event { return r.event(zerolog.WarnLevel) }

// Info is like Warn at info level.
func (r *rateLimitedLog) Info() *zerolog.Event { return r.event(zerolog.InfoLevel) }

// Error is like Warn at error level.
func (r *rateLimitedLog) Error() *zerolog.Event { return r.event(zerolog.ErrorLevel) }

func (r *rateLimitedLog) event(level zerolog.Level) *zerolog.Event {
	now := time.Now().UnixNano()
	last := r.last.Load()
	if now-last < int64(time.Second) || !r.last.CompareAndSwap(last, now) {
		r.suppressed.Add(1)
		return nil
	}
	ev := r.log.WithLevel(level)
	if n := r.suppressed.Swap(0); n > 0 {
		ev = ev.Int64("suppressed", n)
	}
	return ev
}

// lnList returns the listeners accepting now (or, before Start, those opened).
func (s *Server) lnList() []*listener {
	if p := s.lns.Load(); p != nil {
		return *p
	}
	return s.listeners
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
func (s *Server) OpenListener(addr string) (int, error) {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	if err := s.canAddListener(); err != nil {
		return 0, err
	}
	l, err := s.listen(s.nextListener, addr)
	if err != nil {
		return 0, err
	}
	s.nextListener++
	next := append(append([]*listener(nil), s.lnList()...), l)
	s.lns.Store(&next)
	return l.index, nil
}

// StartListener starts accepting on listener i, opened by OpenListener.
func (s *Server) StartListener(i int) error {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	if err := s.canAddListener(); err != nil {
		return err
	}
	for _, l := range s.lnList() {
		if l.index != i {
			continue
		}
		if l.started {
			return fmt.Errorf("reactor: start listener %d: it accepts already", i)
		}
		l.started = true
		l.alive.Store(true)
		s.acceptWG.Add(1)
		go l.accept()
		return nil
	}
	return fmt.Errorf("reactor: start listener: no listener %d", i)
}

// canAddListener reports why no listener can be added now; lnMu is held.
func (s *Server) canAddListener() error {
	select {
	case <-s.stopAccept:
		return errors.New("reactor: add listener: the server no longer accepts")
	default:
	}
	if s.lns.Load() == nil {
		return errors.New("reactor: add listener: the server is not started")
	}
	return nil
}

// RemoveListener stops accepting on listener i: it takes what the kernel has
// already completed in its backlog, then closes it. Connections it accepted
// go on.
func (s *Server) RemoveListener(i int) error {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	cur := s.lnList()
	var l *listener
	next := make([]*listener, 0, len(cur))
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
	l.state.Store(int32(acceptStopped))
	return l.ln.Close()
}
