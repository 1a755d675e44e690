package reactor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Server runs a Handler on gnet's event loops.
type Server struct {
	cfg     Config
	handler Handler
	log     zerolog.Logger

	engine gnet.Engine
	start  time.Time
	clock  atomic.Int64 // nanoseconds since start, updated by the ticker

	loopsMu sync.Mutex
	loops   atomic.Pointer[[]*Loop]

	booted   chan struct{}
	done     chan struct{}
	stopTick chan struct{}
	stopOnce sync.Once
	runErr   error

	dialer *dialPool
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
		cfg:      cfg,
		handler:  h,
		log:      cfg.Logger,
		booted:   make(chan struct{}),
		done:     make(chan struct{}),
		stopTick: make(chan struct{}),
		dialer:   newDialPool(),
	}
	s.loops.Store(&[]*Loop{})
	return s, nil
}

// Config returns the server's normalized configuration.
func (s *Server) Config() Config { return s.cfg }

// Start listens and runs the loops in the background. It returns once the
// server accepts connections, or with the error that stopped it from doing so.
func (s *Server) Start() error {
	s.start = time.Now()
	opts := []gnet.Option{
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(s.cfg.Loops),
		gnet.WithReusePort(s.cfg.ReusePort),
		gnet.WithReadBufferCap(s.cfg.ReadBufferCap),
		gnet.WithEdgeTriggeredIO(s.cfg.EdgeTriggered),
		gnet.WithLogger(newGnetLogger(s.log)),
	}
	if s.cfg.EdgeTriggered {
		// One event may read this much; keep it to one buffer so a paused
		// connection cannot take in more than that.
		opts = append(opts, gnet.WithEdgeTriggeredIOChunk(s.cfg.ReadBufferCap))
	}
	if s.cfg.WriteBufferCap > 0 {
		opts = append(opts, gnet.WithWriteBufferCap(s.cfg.WriteBufferCap))
	}
	if s.cfg.Nagle {
		opts = append(opts, gnet.WithTCPNoDelay(gnet.TCPDelay))
	}
	addrs := make([]string, len(s.cfg.Addrs))
	for i, a := range s.cfg.Addrs {
		if !strings.Contains(a, "://") {
			a = "tcp://" + a
		}
		addrs[i] = a
	}
	go func() {
		defer close(s.done)
		s.runErr = gnet.Rotate(&engineHandler{s: s}, addrs, opts...)
	}()
	select {
	case <-s.booted:
	case <-s.done:
		if s.runErr == nil {
			s.runErr = errors.New("reactor: engine stopped before it booted")
		}
		return fmt.Errorf("reactor: listen on %s: %w", strings.Join(s.cfg.Addrs, ", "), s.runErr)
	}
	go s.tick()
	return nil
}

// Addr returns the bound address of the i-th listen address, which tells the
// port chosen for ":0".
func (s *Server) Addr(i int) (net.Addr, error) {
	var (
		fd  int
		err error
	)
	if len(s.cfg.Addrs) == 1 {
		fd, err = s.engine.Dup()
	} else {
		network, addr, _ := strings.Cut(s.cfg.Addrs[i], "://")
		if addr == "" {
			network, addr = "tcp", s.cfg.Addrs[i]
		}
		fd, err = s.engine.DupListener(network, addr)
	}
	if err != nil {
		return nil, fmt.Errorf("reactor: listener %d: %w", i, err)
	}
	defer unix.Close(fd)
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return nil, fmt.Errorf("reactor: listener %d: getsockname: %w", i, err)
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]).To16(), Port: a.Port}, nil
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}, nil
	case *unix.SockaddrUnix:
		return &net.UnixAddr{Name: a.Name, Net: "unix"}, nil
	}
	return nil, fmt.Errorf("reactor: listener %d: unexpected address %T", i, sa)
}

// Stop closes the listeners and every connection, and waits for the loops
// to exit or ctx to end.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		close(s.stopTick)
		// gnet's Stop polls every 500 ms for the engine to finish; start the
		// shutdown with an expired context and wait for Rotate to return instead.
		expired, cancel := context.WithCancel(context.Background())
		cancel()
		_ = s.engine.Stop(expired)
	})
	select {
	case <-s.done:
		return s.dialer.close(ctx)
	case <-ctx.Done():
		return fmt.Errorf("reactor: stop: %w", ctx.Err())
	}
}

// Done is closed when the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// Stats sums the counters of all loops.
func (s *Server) Stats() Stats {
	var st Stats
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
		// Flow control cannot work without it; say so loudly once per loop.
		s.log.Error().Err(err).Msg("reading gnet's poller descriptor failed: connections on this loop will not pause")
		fd = -1
	}
	l := newLoop(s, el, len(cur), fd)
	next := append(append([]*Loop(nil), cur...), l)
	s.loops.Store(&next)
	return l
}

func (s *Server) tick() {
	t := time.NewTimer(s.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-s.stopTick:
			return
		case <-t.C:
		}
		now := int64(time.Since(s.start))
		s.clock.Store(now)
		fast := false
		for _, l := range *s.loops.Load() {
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

// engineHandler adapts gnet's callbacks to Handler.
type engineHandler struct {
	gnet.BuiltinEventEngine
	s *Server
}

func (e *engineHandler) OnBoot(eng gnet.Engine) gnet.Action {
	e.s.engine = eng
	close(e.s.booted)
	return gnet.None
}

func (e *engineHandler) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	l := e.s.loopOf(gc.EventLoop())
	c, outbound := gc.Context().(*Conn)
	if outbound {
		if c.state&stateCanceled != 0 {
			return nil, gnet.Close
		}
		l.timers.stop(&c.dialTimer)
		l.stats.Dialed.Add(1)
	} else {
		c = newConn(l, e.s.handler)
		l.stats.Accepted.Add(1)
	}
	c.gc = gc
	gc.SetContext(c)
	l.stats.Active.Add(1)
	if c.pause != 0 {
		l.setReadInterest(c, false)
	}
	c.handler.OnOpen(c)
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
	c.state |= stateClosed
	l.stats.Active.Add(-1)
	if c.pause.flowControl() {
		l.stats.Paused.Add(-1)
	}
	l.unwatch(c)
	l.timers.stop(&c.dialTimer)
	c.handler.OnClose(c, err)
	// A producer held back by this connection would otherwise wait forever.
	if p := c.producer; p != c && p.sink == c {
		p.resumeFor(pauseSinkFull | pausePeerInboundFull)
	}
	l.afterCallback()
	return gnet.None
}
