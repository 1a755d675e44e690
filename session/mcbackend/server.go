package mcbackend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/delayq"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/looptimer"
)

// slowBurst is how far ahead of its rate slow-sink mode may read before it
// pauses: the burst it allows is SlowRate × slowBurst (at least one frame).
const slowBurst = 50 * time.Millisecond

// Server is a fake Minecraft Java backend on the reactor: it answers status
// pings, logs clients in offline and echoes their play frames.
type Server struct {
	cfg  Config
	log  zerolog.Logger
	rs   *reactor.Server
	mcfg machineConfig

	loopsMu sync.Mutex
	loops   atomic.Pointer[[]*loopState]
}

// loopState is the backend's state for one loop. Only its counters are read
// from other goroutines.
type loopState struct {
	counters loopCounters
	codec    codec
	sessions []*session // open connections, for Buffered
	delay    *delayer   // with ReplyDelay, made at the loop's first play
}

// New validates cfg and returns a backend that is not yet listening.
func New(cfg Config) (*Server, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg}
	// Whoever runs several servers in one process names this one in the
	// logger it passes (the proxy's demo backend is component=demo-backend);
	// a key added here would appear twice on those lines.
	s.log = cfg.Reactor.Logger
	s.mcfg = machineConfig{
		threshold:    -1,
		maxFrame:     cfg.MaxFrameLength,
		maxLoginSize: cfg.MaxLoginFrameLength,
		skipJoinGame: cfg.SkipJoinGame,
		joinDelayed:  cfg.JoinGameDelay > 0,
		chunkReplies: cfg.ChunkReplies,
		online:       s.playing,

		statusProtocol: cfg.StatusProtocol,
		statusEnd:      statusJSONEnd(cfg.StatusDescription),
		forwarding:     cfg.Forwarding,
		secret:         cfg.ForwardingSecret,
	}
	if cfg.Compression {
		s.mcfg.threshold = cfg.CompressionThreshold
	}
	s.loops.Store(&[]*loopState{})
	rs, err := reactor.NewServer(cfg.Reactor, &handler{srv: s})
	if err != nil {
		return nil, fmt.Errorf("mcbackend: %w", err)
	}
	s.rs = rs
	s.cfg.Reactor = rs.Config()
	return s, nil
}

// Config returns the backend's configuration with defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Start listens and runs the loops in the background; see reactor.Server.Start.
func (s *Server) Start() error { return s.rs.Start() }

// Addr returns the bound address of the i-th listen address.
func (s *Server) Addr(i int) (net.Addr, error) { return s.rs.Addr(i) }

// Stop closes the listeners and every connection, and waits for the loops
// to exit or ctx to end.
func (s *Server) Stop(ctx context.Context) error { return s.rs.Stop(ctx) }

// Done is closed when the backend has stopped.
func (s *Server) Done() <-chan struct{} { return s.rs.Done() }

// Reactor returns the underlying reactor server.
func (s *Server) Reactor() *reactor.Server { return s.rs }

// Stats returns a snapshot of the backend's counters.
func (s *Server) Stats() Stats {
	st := Stats{Reactor: s.rs.Stats()}
	for _, ls := range *s.loops.Load() {
		if ls != nil {
			st.add(&ls.counters)
		}
	}
	return st
}

// Buffered returns the bytes the backend holds for its open connections:
// input received but not consumed and output not yet taken by the kernel,
// each summed over connections. It runs on every loop and waits for them.
func (s *Server) Buffered() (inbound, outbound int, err error) {
	loops := s.rs.Loops()
	type sums struct{ in, out int }
	results := make(chan sums, len(loops))
	for _, l := range loops {
		err := l.Execute(func() {
			var r sums
			for _, ss := range s.loopState(l).sessions {
				r.in += ss.c.InboundBuffered()
				r.out += ss.c.OutboundBuffered()
			}
			results <- r
		})
		if err != nil {
			return 0, 0, fmt.Errorf("mcbackend: buffered: loop %d: %w", l.Index(), err)
		}
	}
	for range loops {
		select {
		case r := <-results:
			inbound += r.in
			outbound += r.out
		case <-s.rs.Done():
			return 0, 0, errors.New("mcbackend: buffered: server stopped")
		}
	}
	return inbound, outbound, nil
}

// playing returns the number of connections in play, for the status JSON.
func (s *Server) playing() int64 {
	var n int64
	for _, ls := range *s.loops.Load() {
		if ls != nil {
			n += ls.counters.playing.Load()
		}
	}
	return n
}

// loopState returns the state of loop l, creating it on first use.
func (s *Server) loopState(l *reactor.Loop) *loopState {
	i := l.Index()
	if cur := *s.loops.Load(); i < len(cur) && cur[i] != nil {
		return cur[i]
	}
	s.loopsMu.Lock()
	defer s.loopsMu.Unlock()
	cur := *s.loops.Load()
	if i < len(cur) && cur[i] != nil {
		return cur[i]
	}
	next := make([]*loopState, max(len(cur), i+1))
	copy(next, cur)
	next[i] = &loopState{}
	s.loops.Store(&next)
	return next[i]
}

// session is one connection's state.
type session struct {
	srv  *Server
	c    *reactor.Conn
	ls   *loopState
	m    machine
	slot int // position in ls.sessions

	deadline looptimer.Timer // login timeout
	resume   looptimer.Timer // slow-sink: read again
	join     looptimer.Timer // JoinGameDelay: send Login (play)
	readyAt  int64           // slow-sink: loop time at which the bytes read so far are paid for

	held      *delayq.Queue // ReplyDelay: echo not yet due
	heldPause bool          // ReplyDelay: reading stopped while too much is held
}

// handler runs the backend's sessions on the loops.
type handler struct{ srv *Server }

func (h *handler) OnOpen(c *reactor.Conn) {
	srv := h.srv
	ls := srv.loopState(c.Loop())
	s := &session{srv: srv, c: c, ls: ls}
	s.m = newMachine(&srv.mcfg, &ls.codec, &ls.counters)
	s.deadline.F = s.onDeadline
	s.resume.F = s.onResume
	s.join.F = s.onJoin
	s.slot = len(ls.sessions)
	ls.sessions = append(ls.sessions, s)
	c.Value = s
	if srv.cfg.LoginTimeout > 0 {
		c.Loop().Schedule(&s.deadline, srv.cfg.LoginTimeout)
	}
}

func (h *handler) OnTraffic(c *reactor.Conn) {
	s := c.Value.(*session)
	if s.m.need > 0 && c.InboundBuffered() < s.m.need {
		return // the next frame is not whole yet
	}
	s.answer(false)
}

// OnReadEOF implements reactor.HalfCloseHandler: a client that has sent
// its last frame still gets every answer. The whole frames left unread are
// answered (echoed, past the watermark: the input is gone after this call)
// and the connection closes once its output is delivered. Being a
// half-close handler also makes the reactor queue the connection's output
// itself, in pooled 16 KiB chunks that the buffer budget counts whole,
// rather than in gnet's buffers, whose capacity the budget does not see:
// so the backend's memory under clients that do not read is bounded as
// serve's is.
func (h *handler) OnReadEOF(c *reactor.Conn) {
	s := c.Value.(*session)
	if s.answer(true) {
		c.Close()
	}
}

// answer answers the whole frames read so far: the login's steps, then the
// play echo. Unless eof, the echo stops where Backpressure pauses c, and
// the rest is offered again when it resumes. At eof it goes on past the
// watermark, up to the watermark plus the input's size (all of an echo;
// chunk replies past that are not sent). It reports whether the
// connection is still open.
func (s *session) answer(eof bool) bool {
	c := s.c
	in, err := c.Peek(-1)
	if err != nil || len(in) == 0 {
		return true
	}
	eofLimit := c.OutboundBuffered() + len(in) + s.srv.cfg.Reactor.HighWatermark
	out := c.Loop().Batch()
	consumed := 0
	if s.m.phase < phasePlay {
		consumed, err = s.m.advance(in, out)
		if err == nil && s.m.phase == phasePlay {
			s.startPlay()
		}
	}
	var eo emitter = out
	if d := s.ls.delay; d != nil {
		eo = holdEmitter{d: d, s: s}
	}
	// echo returns after each chunk reply: the reply is written, and the
	// rest of the read answered only while the output is under the high
	// watermark (Backpressure pauses c otherwise, and the rest is offered
	// again when it resumes), so a client that asks and does not read
	// holds at most the watermark and one reply here.
	for err == nil && s.m.phase == phasePlay && (eof || !c.Paused()) && consumed < len(in) {
		budget := s.readBudget()
		if eof {
			budget = int(^uint(0) >> 1)
		}
		n, frames, eerr := s.m.echo(in[consumed:], budget, eo)
		err = eerr
		consumed += n
		s.ls.counters.echoFrames.Add(int64(frames))
		s.ls.counters.echoBytes.Add(int64(n))
		if !eof {
			s.spend(n)
		}
		if n == 0 || err != nil {
			break // a partial frame, or bad input
		}
		// The batch may reference in, so it is written before in is discarded.
		_ = c.WriteBatch(out)
		if eof && c.OutboundBuffered() > eofLimit {
			break
		}
		if !eof && c.Backpressure() {
			break
		}
	}
	_ = c.WriteBatch(out)
	if consumed > 0 {
		c.Discard(consumed)
	}
	switch {
	case err != nil:
		s.reject(err)
		return false
	case s.m.phase == phaseDone:
		c.Close()
		return false
	case !eof:
		c.Backpressure()
	}
	return true
}

func (h *handler) OnClose(c *reactor.Conn, _ error) {
	s := c.Value.(*session)
	l := c.Loop()
	l.Stop(&s.deadline)
	l.Stop(&s.resume)
	l.Stop(&s.join)
	if s.m.phase == phasePlay {
		s.ls.counters.playing.Add(-1)
	}
	ss := s.ls.sessions
	last := len(ss) - 1
	ss[s.slot] = ss[last]
	ss[s.slot].slot = s.slot
	ss[last] = nil
	s.ls.sessions = ss[:last]
}

// startPlay sets the connection up for play once the machine has entered it.
func (s *session) startPlay() {
	c, l := s.c, s.c.Loop()
	l.Stop(&s.deadline)
	s.ls.counters.playStarted.Add(1)
	s.ls.counters.playing.Add(1)
	c.SetSink(c) // the echo goes back into c: stop reading c while its output is full
	if s.m.joinHeld {
		l.Schedule(&s.join, s.srv.cfg.JoinGameDelay)
	}
	s.srv.log.Debug().Str("remote", remote(c)).Bytes("username", s.m.username()).
		Int32("protocol", s.m.protocol).Str("forge", s.m.forge.String()).
		Bool("compressed", s.m.compressed).Msg("client entered play")
	switch s.srv.cfg.SlowSink {
	case SlowSinkStall:
		s.ls.counters.stalled.Add(1)
		c.PauseRead()
	case SlowSinkSlow:
		s.readyAt = l.Now()
	}
	if d := s.srv.cfg.ReplyDelay; d > 0 && s.ls.delay == nil {
		dl, err := newDelayer(l, d, &s.ls.counters, s.srv.rs.Done())
		if err != nil {
			// Echoing without the hold would measure something else.
			s.srv.log.Error().Err(err).Msg("closing connection: reply delay unavailable")
			c.Close()
			return
		}
		s.ls.delay = dl
	}
}

// readBudget returns how many play bytes may be consumed now: unlimited
// unless in slow-sink mode.
func (s *session) readBudget() int {
	if s.srv.cfg.SlowSink != SlowSinkSlow {
		return int(^uint(0) >> 1)
	}
	now := s.c.Loop().Now()
	ahead := now + int64(slowBurst) - max(s.readyAt, now) // idle time earns no credit
	if ahead <= 0 {
		return 1 // still admits one frame; spend pauses afterwards
	}
	return int(max(1, ahead*int64(s.srv.cfg.SlowRate)/int64(time.Second)))
}

// spend accounts for n play bytes consumed in slow-sink mode, and stops
// reading until they are paid for when the reads got ahead of the rate.
func (s *session) spend(n int) {
	if s.srv.cfg.SlowSink != SlowSinkSlow || n == 0 {
		return
	}
	l := s.c.Loop()
	now := l.Now()
	s.readyAt = max(s.readyAt, now) + int64(n)*int64(time.Second)/int64(s.srv.cfg.SlowRate)
	if s.readyAt > now+int64(slowBurst) {
		s.ls.counters.slowPauses.Add(1)
		s.c.PauseRead()
		l.ScheduleAt(&s.resume, s.readyAt-int64(slowBurst))
	}
}

func (s *session) onResume() { s.c.ResumeRead() }

// onJoin sends the Login (play) held for JoinGameDelay.
func (s *session) onJoin() {
	if s.c.Closing() {
		return
	}
	out := s.c.Loop().Batch()
	s.m.emit(out, AppendJoinGame(s.m.codec.packet[:0]))
	_ = s.c.WriteBatch(out)
}

func (s *session) onDeadline() {
	if s.c.Closing() {
		return
	}
	s.ls.counters.timeouts.Add(1)
	s.srv.log.Info().Str("remote", remote(s.c)).Str("phase", s.m.phase.String()).
		Int32("protocol", s.m.protocol).Dur("timeout", s.srv.cfg.LoginTimeout).
		Msg("closing connection: login did not finish in time")
	s.c.Close()
}

// reject closes the connection after bad input, logging and counting why.
func (s *session) reject(err error) {
	r := reasonOf(err)
	s.ls.counters.rejected[r].Add(1)
	s.srv.log.Warn().Str("remote", remote(s.c)).Str("reason", r.String()).
		Str("phase", s.m.phase.String()).Int32("protocol", s.m.protocol).Err(err).
		Msg("closing connection on bad input")
	s.c.Close()
}

func remote(c *reactor.Conn) string {
	if a := c.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}
