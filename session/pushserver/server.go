package pushserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/reactor"
)

// Server is the push server: a publish listener and a subscribe listener,
// each served by its own reactor.Server.
type Server struct {
	cfg Config
	log zerolog.Logger
	hub *hub

	pub, sub *reactor.Server
	pubCnt   []counters // per publish loop
	subLoops []*subLoop // per subscribe loop

	// afterBatchWrite, when set (by a test, before Start), runs on a
	// subscriber loop after each batch is written and before its outcome
	// is counted: a seam where a reader of Stats can look mid-flush.
	afterBatchWrite func()

	_      [64]byte     // keep queued off the cache lines of the fields above
	queued atomic.Int64 // output queued for all subscribers, as last looked at
}

// New validates cfg and returns a server that is not yet listening.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, hub: newHub(cfg.MaxTopics)}
	s.pubCnt = make([]counters, cfg.PublishLoops)
	s.subLoops = make([]*subLoop, cfg.Loops)
	for i := range s.subLoops {
		s.subLoops[i] = &subLoop{hub: s.hub, topics: make(map[*topic]*localTopic)}
	}
	var err error
	s.pub, err = reactor.NewServer(reactor.Config{
		Addrs:  []string{cfg.PublishAddr},
		Loops:  cfg.PublishLoops,
		Tick:   cfg.Tick,
		Logger: cfg.Logger.With().Str("listener", "publish").Logger(),
	}, publishHandler{s})
	if err != nil {
		return nil, fmt.Errorf("push: publish listener: %w", err)
	}
	s.sub, err = reactor.NewServer(reactor.Config{
		Addrs:         []string{cfg.SubscribeAddr},
		Loops:         cfg.Loops,
		Tick:          cfg.Tick,
		HighWatermark: cfg.HighWatermark,
		LowWatermark:  cfg.HighWatermark / 2,
		Logger:        cfg.Logger.With().Str("listener", "subscribe").Logger(),
	}, subscribeHandler{s})
	if err != nil {
		return nil, fmt.Errorf("push: subscribe listener: %w", err)
	}
	return s, nil
}

// Config returns the server's validated configuration.
func (s *Server) Config() Config { return s.cfg }

// Start listens on both addresses.
func (s *Server) Start() error {
	// The reactor's error names the address it could not listen on.
	if err := s.sub.Start(); err != nil {
		return fmt.Errorf("push: start subscribe listener: %w", err)
	}
	if err := s.pub.Start(); err != nil {
		_ = s.sub.Stop(context.Background())
		return fmt.Errorf("push: start publish listener: %w", err)
	}
	s.log.Info().Str("publish", boundAddr(s.pub, s.cfg.PublishAddr)).Str("subscribe", boundAddr(s.sub, s.cfg.SubscribeAddr)).
		Dur("window", s.cfg.Window).Dur("heartbeat", s.cfg.Heartbeat).Dur("read_idle", s.cfg.ReadIdle).
		Int("high_watermark", s.cfg.HighWatermark).Dur("not_writable_timeout", s.cfg.NotWritableTimeout).
		Int("buffer_budget", s.cfg.BufferBudget).Int("loops", s.cfg.Loops).Msg("push server listening")
	return nil
}

// boundAddr returns the address srv's listener is bound to, which names the
// port chosen for ":0" and the family bound ("0.0.0.0:7400", not
// "[::]:7400"), or the configured one if it has none.
func boundAddr(srv *reactor.Server, configured string) string {
	if a, err := srv.Addr(0); err == nil {
		return a.String()
	}
	return configured
}

// PublishAddr returns the bound publish address.
func (s *Server) PublishAddr() (net.Addr, error) { return s.pub.Addr(0) }

// SubscribeAddr returns the bound subscribe address.
func (s *Server) SubscribeAddr() (net.Addr, error) { return s.sub.Addr(0) }

// Stop closes the publishers first, then the subscribers, and waits for both
// or for ctx to end.
func (s *Server) Stop(ctx context.Context) error {
	return errors.Join(s.pub.Stop(ctx), s.sub.Stop(ctx))
}

// Shutdown drains the server: both listeners stop accepting at once,
// publishers may go on until they disconnect or ctx ends, and then every
// subscriber gets its pending batch and is closed once its queued output has
// been delivered (bounded by the linger). It returns
// reactor.ErrDrainDeadline when publishers were still connected at ctx's end.
func (s *Server) Shutdown(ctx context.Context) error {
	s.sub.StopAccepting()
	perr := s.pub.Shutdown(ctx)
	// Subscribers never end by themselves: their deadline is now.
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	serr := s.sub.Shutdown(expired)
	if errors.Is(serr, reactor.ErrDrainDeadline) {
		serr = nil // closing them was the plan
	}
	return errors.Join(perr, serr)
}

// OpenConns returns how many publishers and subscribers are connected.
func (s *Server) OpenConns() int64 { return s.pub.OpenConns() + s.sub.OpenConns() }

// Stats returns a snapshot of the counters summed over loops.
func (s *Server) Stats() Stats {
	st := Stats{Rejects: map[string]int64{}, Refusals: map[string]int64{}}
	for i := range s.pubCnt {
		st.add(&s.pubCnt[i])
	}
	for _, sl := range s.subLoops {
		st.add(&sl.counters)
	}
	st.Topics = int64(s.hub.len())
	st.QueuedBytes = s.queued.Load()
	return st
}

// ReactorStats returns the reactor servers' own counters: publish, subscribe.
func (s *Server) ReactorStats() (publish, subscribe reactor.Stats) {
	return s.pub.Stats(), s.sub.Stats()
}

// Reactors returns the underlying reactor servers: publish, subscribe.
func (s *Server) Reactors() (publish, subscribe *reactor.Server) { return s.pub, s.sub }

func (s *Server) pubCounters(l *reactor.Loop) *counters { return &s.pubCnt[l.Index()] }

// subLoopOf returns the state of subscriber loop l; it runs on l.
func (s *Server) subLoopOf(l *reactor.Loop) *subLoop {
	sl := s.subLoops[l.Index()]
	if sl.loop == nil { // set once, before any localTopic of sl is published
		sl.loop = l
	}
	return sl
}
