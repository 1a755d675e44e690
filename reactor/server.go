package reactor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/reactor/acceptor"
	"github.com/tidegate/tidegate/reactor/adopt"
	"github.com/tidegate/tidegate/reactor/bufferbudget"
	"github.com/tidegate/tidegate/reactor/fdbudget"
	"github.com/tidegate/tidegate/reactor/workerpool"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"
)

// Server runs a Handler on gnet's event loops. It owns its listening
// sockets: an accept goroutine per listener admits connections under the
// server's limits and hands them to the loops (see doc.go).
type Server struct {
	cfg     Config
	handler Handler
	log     zerolog.Logger

	engine gnet.Engine
	start  time.Time
	clock  atomic.Int64 // nanoseconds since start, updated by the ticker

	loopsMu sync.Mutex
	loops   atomic.Pointer[[]*Loop]

	accept         *acceptor.Set
	pendingEnrolls chan *enrollment
	settleWG       sync.WaitGroup // the goroutine settling enrolls
	acceptedOpen   atomic.Int64   // accepted connections open (OnOpen ran, OnClose not yet)
	enrolling      atomic.Int64   // accepted, not yet settled
	adoptions      adopt.Gate     // a drain waits for the adoptions under way, and stops the later ones

	booted   chan struct{}
	done     chan struct{}
	stopTick chan struct{}
	stopOnce sync.Once
	stopping atomic.Bool
	draining atomic.Bool // StopAccepting was called
	runErr   error

	dialer *workerpool.Pool[dialJob]
}

// NewServer validates cfg and returns a server that is not yet listening.
func NewServer(cfg Config, h Handler) (*Server, error) {
	if err := cfg.Normalize(); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New("reactor: nil handler")
	}
	s := &Server{
		cfg:            cfg,
		handler:        h,
		log:            cfg.Logger,
		pendingEnrolls: make(chan *enrollment, 1024),
		booted:         make(chan struct{}),
		done:           make(chan struct{}),
		stopTick:       make(chan struct{}),
		dialer:         newDialPool(),
	}
	s.accept = acceptor.NewSet((*acceptHooks)(s), acceptor.Config{Addrs: cfg.Addrs, Listeners: cfg.Listeners,
		ReusePort: cfg.ReusePort, MaxConns: cfg.MaxConns, Logger: cfg.Logger, Hold: cfg.holdAccept})
	s.loops.Store(&[]*Loop{})
	return s, nil
}

// Config returns the server's normalized configuration.
func (s *Server) Config() Config { return s.cfg }

// Start listens and runs the loops in the background. It returns once the
// server accepts connections, or with the error that stopped it from doing
// so; a *fdbudget.LimitError when MaxConns cannot fit in the descriptor limit.
func (s *Server) Start() error {
	s.start = time.Now()
	limit, err := fdbudget.RaiseFileLimit()
	if err != nil {
		return err
	}
	fdbudget.SetLimit(limit)
	if err := s.accept.Listen(); err != nil {
		return err
	}
	// gnet needs a listener of its own: one nothing can reach (gnetcompat.go).
	placeholder, removePlaceholder, err := gnetPlaceholder()
	if err != nil {
		s.accept.Stop()
		return err
	}
	defer removePlaceholder()
	opts := []gnet.Option{
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(s.cfg.Loops),
		gnet.WithLoadBalancing(gnet.LeastConnections),
		// gnet's ticker starts once every loop is registered; its first
		// OnTick tells Start that connections can be handed to the loops.
		gnet.WithTicker(true),
		gnet.WithReadBufferCap(s.cfg.ReadBufferCap),
		gnet.WithLogger(newGnetLogger(s.log)),
	}
	if s.cfg.WriteBufferCap > 0 {
		opts = append(opts, gnet.WithWriteBufferCap(s.cfg.WriteBufferCap))
	}
	if s.cfg.Nagle {
		opts = append(opts, gnet.WithTCPNoDelay(gnet.TCPDelay))
	}
	go func() {
		defer close(s.done)
		err := gnet.Rotate(&engineHandler{s: s}, []string{placeholder}, opts...)
		if err == nil && !s.stopping.Load() {
			err = errors.New("gnet's engine stopped without being asked to")
		}
		s.runErr = err
		if !s.stopping.Load() {
			s.log.Error().Err(err).Msg("event loops ended: closing the listeners")
			s.accept.Stop()
		}
	}()
	select {
	case <-s.booted:
	case <-s.done:
		s.accept.Stop()
		return fmt.Errorf("reactor: start event loops: %w", s.runErr)
	}
	// Without the pollers' descriptors no connection could be paused: refuse
	// to run unbounded rather than log it and go on.
	if err := s.checkPollers(); err != nil {
		s.abortStart()
		return err
	}
	open, err := fdbudget.MeasureBase()
	if err != nil {
		s.abortStart()
		return err
	}
	if m := s.cfg.MaxConns; m > 0 && !fdbudget.Room(m*s.cfg.FDsPerConn, s.cfg.FDReserve) {
		s.abortStart()
		return &fdbudget.LimitError{MaxConns: m, PerConn: s.cfg.FDsPerConn, Reserve: s.cfg.FDReserve,
			InUse: open, Limit: limit}
	}
	// The descriptor table grown now rather than under an accept storm,
	// where each growth stalls every accept and makes OS threads (doc.go).
	if err := fdbudget.PresizeTable(fdbudget.Need(s.cfg.MaxConns, s.cfg.FDsPerConn, s.cfg.FDReserve, open)); err != nil {
		s.log.Warn().Err(err).Msg("descriptor table not grown ahead: it grows under load instead")
	}
	s.settleWG.Add(1)
	go s.settleEnrolls()
	s.accept.Start()
	go s.tick()
	return nil
}

// abortStart undoes a Start that failed after the engine booted.
func (s *Server) abortStart() {
	s.stopping.Store(true)
	s.accept.Stop()
	close(s.stopTick)
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.engine.Stop(expired)
	<-s.done
}

// Stop closes the listeners and every connection, and waits for the loops
// to exit or ctx to end.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		s.accept.Stop()
		close(s.stopTick)
		go func() {
			// Connections accepted before the listeners closed are handed
			// over first, so that none is left half-registered.
			s.accept.Wait()
			close(s.pendingEnrolls)
			s.settleWG.Wait()
			// gnet closes the connections it has; half-closed ones are ours.
			s.closeTails()
			// gnet's Stop polls every 500 ms for the engine to finish; start the
			// shutdown with an expired context and wait for Rotate to return instead.
			expired, cancel := context.WithCancel(context.Background())
			cancel()
			_ = s.engine.Stop(expired)
		}()
	})
	select {
	case <-s.done:
		return s.dialer.Close(ctx)
	case <-ctx.Done():
		return fmt.Errorf("reactor: stop: %w", ctx.Err())
	}
}

// Err returns why the event loops ended without Stop, once Done is closed;
// nil while they run or after Stop.
func (s *Server) Err() error {
	select {
	case <-s.done:
	default:
		return nil
	}
	if s.stopping.Load() {
		return nil
	}
	return s.runErr
}

// Done is closed when the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// Stats sums the counters of all loops.
func (s *Server) Stats() Stats {
	st := Stats{AcceptPauses: s.accept.Pauses(), AcceptErrors: s.accept.Errors(), QueuedBytes: bufferbudget.Queued()}
	for _, l := range *s.loops.Load() {
		st.add(&l.stats)
	}
	return st
}

// Loops returns the loops that have had a connection so far.
func (s *Server) Loops() []*Loop { return *s.loops.Load() }

func (s *Server) loopOf(el gnet.EventLoop) *Loop {
	for _, l := range *s.loops.Load() {
		if l.el == el {
			return l
		}
	}
	s.loopsMu.Lock()
	defer s.loopsMu.Unlock()
	cur := *s.loops.Load()
	for _, l := range cur {
		if l.el == el {
			return l
		}
	}
	fd, err := pollerFD(el)
	if err != nil {
		// Start checked every loop's descriptor, so this is a loop gnet did
		// not list then. Flow control cannot work on it: its connections are
		// refused (OnOpen) rather than run unbounded.
		s.log.Error().Err(err).Msg("reading gnet's poller descriptor failed: refusing the connections of this loop")
		fd = -1
	}
	l := newLoop(s, el, len(cur), fd)
	next := append(append([]*Loop(nil), cur...), l)
	s.loops.Store(&next)
	return l
}

func (s *Server) tick() {
	defer s.closeDrainWatchers()
	t := time.NewTimer(s.cfg.Tick)
	defer t.Stop()
	// A loop whose first waiter needs polling kicks the ticker out of a
	// Tick-long sleep; every loop gets the channel at its first tick.
	kick := make(chan struct{}, 1)
	for {
		select {
		case <-s.stopTick:
			return
		case <-s.done:
			return
		case <-t.C:
		case <-kick:
		}
		now := int64(time.Since(s.start))
		s.clock.Store(now)
		fast := false
		for _, l := range *s.loops.Load() {
			if l.kick.Load() == nil {
				l.kick.Store(&kick)
			}
			waiting := l.waiting.Load() > 0
			fast = fast || waiting
			next := l.nextDeadline.Load()
			if (waiting || (next != 0 && next <= now)) && l.tickQueued.CompareAndSwap(false, true) {
				if err := l.el.Execute(context.Background(), l.tickRunnable); err != nil {
					l.tickQueued.Store(false)
				}
			}
		}
		if fast {
			t.Reset(s.cfg.DrainPoll)
		} else {
			t.Reset(s.cfg.Tick)
		}
	}
}

// errNoPoller is why a connection on a loop without a poller descriptor is refused.
var errNoPoller = errors.New("reactor: the loop's poller descriptor is unknown, so the connection could not be paused")

// engineHandler adapts gnet's callbacks to Handler.
type engineHandler struct {
	gnet.BuiltinEventEngine
	s        *Server
	bootOnce sync.Once
}

func (e *engineHandler) OnBoot(eng gnet.Engine) gnet.Action {
	e.s.engine = eng
	return gnet.None
}

// OnTick runs first once gnet has registered every loop, and then rarely.
func (e *engineHandler) OnTick() (time.Duration, gnet.Action) {
	e.bootOnce.Do(func() { close(e.s.booted) })
	return time.Hour, gnet.None
}

func (e *engineHandler) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	l := e.s.loopOf(gc.EventLoop())
	if l.pollFD < 0 {
		// No flow control on this loop (loopOf logged why): its connections
		// are refused, their descriptors given back to the budget.
		switch v := gc.Context().(type) {
		case *enrollment:
			v.opened.Store(true) // and its descriptors given back here
			holdFDs(-e.s.cfg.FDsPerConn)
			e.s.accept.Wake()
		case *Conn:
			addr := ""
			if ra := gc.RemoteAddr(); ra != nil {
				addr = ra.String()
			}
			l.dialFailed(v, &DialError{Addr: addr, Local: true, Err: errNoPoller})
		}
		return nil, gnet.Close
	}
	var c *Conn
	switch v := gc.Context().(type) {
	case *Conn: // a dial of ours, or a connection adopted from another process
		c = v
		if c.state&stateCanceled != 0 {
			return nil, gnet.Close
		}
		c.stopDial()
		c.tidy() // the dial's state goes with its deadline
		switch {
		case c.state&stateAdopted == 0:
			l.stats.Dialed.Add(1)
		case c.listener >= 0:
			l.stats.Accepted.Add(1)
		}
	case *enrollment:
		v.opened.Store(true)
		c = newConn(l, e.s.handler)
		c.listener = int32(v.listener)
		e.s.acceptedOpen.Add(1)
		l.stats.Accepted.Add(1)
	case *adoption: // Server.Adopt, which did the accounting
		c = newConn(l, v.h)
		v.c = c
		c.Value = v.value
		c.listener = int32(v.listener)
		c.state |= stateAdopted
		if c.listener < 0 {
			c.state |= stateOutbound
			l.stats.Dialed.Add(1)
		} else {
			l.stats.Accepted.Add(1)
		}
	default: // nothing else is ours; gnet's own listener cannot be reached
		return nil, gnet.Close
	}
	c.gc = gc
	gc.SetContext(c)
	l.shareAddrIPs(gc.LocalAddr(), gc.RemoteAddr())
	_, c.halfClose = c.handler.(HalfCloseHandler)
	l.stats.Active.Add(1)
	l.track(c)
	if c.pause != 0 {
		l.setReadInterest(c, false)
	}
	c.handler.OnOpen(c)
	if c.state&stateWantShutWrite != 0 { // CloseWrite came before the connection opened
		c.state &^= stateWantShutWrite
		c.CloseWrite()
	}
	l.afterCallback()
	return nil, gnet.None
}

func (e *engineHandler) OnTraffic(gc gnet.Conn) gnet.Action {
	c, ok := gc.Context().(*Conn)
	if !ok { // a canceled dial that gnet opened before OnOpen closed it
		_, _ = gc.Discard(-1)
		return gnet.None
	}
	l := c.loop
	switch {
	case c.state&(stateClosing|stateCloseQueued|stateClosed) != 0:
		_, _ = gc.Discard(-1)
	case c.pause != 0:
		l.onPausedTraffic(c)
	default:
		l.traffic(c)
	}
	l.afterCallback()
	return gnet.None
}

func (e *engineHandler) OnClose(gc gnet.Conn, err error) gnet.Action {
	c, ok := gc.Context().(*Conn)
	if !ok || c.state&stateClosed != 0 {
		return gnet.None
	}
	l := c.loop
	if c.state&stateCanceled != 0 {
		c.state |= stateClosed
		return gnet.None
	}
	if errors.Is(err, io.EOF) && c.pause != 0 && c.state&(stateClosing|stateCloseQueued) == 0 {
		// gnet closes a connection it is not reading when the peer has
		// closed both ways (EPOLLHUP without EPOLLIN); what the peer sent
		// before is still in the socket, and goes to the handler.
		l.readRest(c, gc)
		a := c.aux // readRest made it; held here so that the reset needs no aux to be left
		defer func() { a.eofRest = nil }()
	}
	// A peer's FIN: a handler that relays half-closes keeps the socket for
	// writing (an EOF during our own close is just the end).
	if c.halfClose && errors.Is(err, io.EOF) && c.state&(stateClosing|stateCloseQueued) == 0 && l.becomeTail(c) {
		a := c.aux // becomeTail made it
		a.eofInput = gc
		c.handler.(HalfCloseHandler).OnReadEOF(c)
		a.eofInput = nil
		l.afterCallback()
		return gnet.None
	}
	if err == nil {
		err = c.closeErr() // a write error the reactor closed it for
	}
	l.finishClose(c, err)
	l.afterCallback()
	return gnet.None
}

// finishClose ends c: counters, the descriptor budget, timers, the
// handler's OnClose, and the producer it held back.
func (l *Loop) finishClose(c *Conn, err error) {
	s := l.srv
	c.state |= stateClosed
	l.stats.Active.Add(-1)
	if c.listener >= 0 {
		s.acceptedOpen.Add(-1)
		holdFDs(-s.cfg.FDsPerConn)
		s.accept.Wake()
	}
	if c.pause.flowControl() {
		l.stats.Paused.Add(-1)
	}
	l.unwatch(c)
	l.untrack(c)
	l.unaccount(c)
	c.releaseQueue()
	c.stopDial()
	c.handler.OnClose(c, err)
	// A producer held back by this connection would otherwise wait forever.
	if p := c.producer; p != c && p.sink == c {
		p.resumeFor(pauseSinkFull | pausePeerInboundFull)
	}
}
