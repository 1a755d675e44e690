// Package proxy is tidegate's Minecraft-aware proxy and raw TCP relay. Each
// client and its backend are two connections on the same event loop; the
// session that joins them is a state machine run by their callbacks.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/bufferbudget"
	"github.com/tidegate/tidegate/session/cluster"
	"github.com/tidegate/tidegate/session/mcauth"
	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/bungeechan"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/inspect"
	"github.com/tidegate/tidegate/session/proxy/login"
	"github.com/tidegate/tidegate/session/proxy/move"
	"github.com/tidegate/tidegate/session/proxy/network"
	"github.com/tidegate/tidegate/session/proxy/probe"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
	"github.com/tidegate/tidegate/session/proxy/ratelimit"
	"github.com/tidegate/tidegate/session/proxy/reasons"
	"github.com/tidegate/tidegate/session/proxy/reframe"
	"github.com/tidegate/tidegate/session/proxy/status"

	"github.com/rs/zerolog"
)

// Proxy serves the listeners of a Config.
type Proxy struct {
	log zerolog.Logger
	rs  *reactor.Server
	gen atomic.Pointer[generation] // the configuration new sessions start under

	reloadMu sync.Mutex // one Reload at a time
	reloads  [2]atomic.Int64

	loops []loopState // indexed by reactor.Loop.Index

	perIP ratelimit.SessionsPerIP // max_sessions_per_ip
	src   *ratelimit.Limiter      // per-address rates and subnet caps, kept across reloads

	refusals ratelimit.RefusalLog // samples the refusal logs of the flood-prone reasons

	backendSide backendHandler
	probers     probe.Probers // active probes, when health.interval is set (probe.go)

	refresher status.Refresher // status cache refreshes (status.go)

	handedOver, handedOverQueued atomic.Int64          // live upgrades (upgrade.go), see Stats
	cluster                      *cluster.Client       // shared player state (cluster.go); nil when cluster.redis is off
	auth                         *mcauth.Authenticator // login: online (online.go); nil when no group had it at New
	bungee                       *bungeechan.Directory // the players and servers the BungeeCord channel names (moving.go)
	clusterReset                 bool                  // at Start, remove what a previous run left under the proxy's ID

	sentMu      sync.Mutex
	sentTickets []*cluster.Ticket // of the sessions a hand-over sent (HandOverLost)
	takingOver  atomic.Int32      // TakeOver is running (takeover.go)
	reloadHolds atomic.Int32      // live upgrades under way here: reloads are refused (HoldReloads)
	// ackReaderDone is closed when the last hand-over's acknowledgements
	// end (HandOverLost waits for it).
	ackReaderDone chan struct{}
}

// loopState is what the proxy keeps per loop: counters, random state,
// scratch space for handshakes rewritten toward backends, and the last
// refusals (read on the loop, by the admin API: admin_data.go).
type loopState struct {
	counters       loopCounters
	rnd            uint64
	addrBuf, hsBuf []byte
	recent         admin.RefusalRing
	compressor     mc.Compressor               // terminated logins' frames (terminate.go)
	ciphers        login.CipherTable[*session] // of its encrypted sessions (online.go): a session has no room for them
	kept           login.KeptTable[*session]   // what its terminated sessions keep of their login (terminate.go), for a live upgrade
	players        move.Table[*session]        // of its movable sessions (moving.go)
	reframes       reframe.Loop[*session]      // of its sessions whose two sides compress differently (session.go)
	inspect        inspect.Loop[*session]      // of its sessions whose backends' packets are looked at (moving.go)
	bungee         bungeechan.Table[*session]  // of its sessions that answer the BungeeCord channel (moving.go)
}

// New builds a proxy from a validated configuration; log receives its logs.
func New(cfg *config.Config, log zerolog.Logger) (*Proxy, error) {
	return NewWithListeners(cfg, log, nil)
}

// NewWithListeners is New with sockets already listening for some of the
// configured listeners (by index; nil entries are bound at Start), such as
// those a process being upgraded handed over.
func NewWithListeners(cfg *config.Config, log zerolog.Logger, listeners []net.Listener) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Proxy{log: log, src: ratelimit.New()}
	p.backendSide.p = p
	var err error
	if p.cluster, err = network.NewClient(cfg.Cluster, p.log, p.onKick); err != nil {
		return nil, err
	}
	p.bungee = bungeechan.NewDirectory(log, func() *config.Config { return p.cur().cfg }, p.cluster)
	if p.auth, err = login.NewAuthenticator(cfg); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	// A process started with listeners handed over takes the sessions of
	// the one before it, which stay published under the same ID.
	p.clusterReset = !slices.ContainsFunc(listeners, func(l net.Listener) bool { return l != nil })
	addrs := make([]string, len(cfg.Listeners))
	for i := range cfg.Listeners {
		addrs[i] = "tcp://" + cfg.Listeners[i].Listen
	}
	rs, err := reactor.NewServer(reactor.Config{
		Addrs:         addrs,
		Loops:         cfg.Loops,
		ReusePort:     cfg.ReusePort,
		HighWatermark: cfg.Limits.HighWatermark,
		LowWatermark:  cfg.Limits.LowWatermark,
		Linger:        cfg.Limits.Linger,
		// max_sessions is enforced where connections are accepted: at the
		// limit the proxy stops accepting and new players wait in the
		// kernel's backlog, rather than being accepted and refused.
		MaxConns:     cfg.Limits.MaxSessions,
		FDsPerConn:   2, // the client and its backend
		BufferBudget: cfg.Limits.BufferBudget,
		Listeners:    listeners,
		Logger:       log,
	}, (*clientHandler)(p))
	if err != nil {
		if p.cluster != nil {
			_ = p.cluster.Stop(context.Background())
		}
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p.rs = rs
	p.loops = make([]loopState, rs.Config().Loops)
	for i := range p.loops {
		p.loops[i].rnd = uint64(i)*0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D
	}
	p.gen.Store(newGeneration(cfg, nil, indices(len(cfg.Listeners)), len(p.loops)))
	return p, nil
}

// Start listens and serves in the background, and starts the active
// probes if configured.
func (p *Proxy) Start() error {
	if p.cluster != nil {
		// Before the listeners: its first heartbeat must be done before the
		// first login (cluster.Client.Start).
		p.cluster.Start(p.clusterReset)
	}
	if err := p.rs.Start(); err != nil {
		if p.cluster != nil {
			_ = p.cluster.Stop(context.Background())
		}
		return fmt.Errorf("proxy: %w", err)
	}
	p.probers.Start(p.newProbes)
	return nil
}

// Addr returns the bound address of the i-th listener.
func (p *Proxy) Addr(i int) (net.Addr, error) { return p.rs.Addr(i) }

// Reactor returns the underlying reactor server.
func (p *Proxy) Reactor() *reactor.Server { return p.rs }

// Stop stops the active probes, closes every connection and waits for the
// probers and the loops to exit.
func (p *Proxy) Stop(ctx context.Context) error {
	err := errors.Join(p.probers.Stop(ctx), p.refresher.Stop(ctx), p.rs.Stop(ctx))
	return errors.Join(err, login.CloseAuthenticator(ctx, p.auth), p.stopCluster(ctx))
}

// Shutdown drains the proxy: it stops accepting at once and lets open
// sessions run until they end or ctx ends; then players still logging in get
// the shutdown message as a disconnect, every session is closed without
// losing queued output, and the proxy stops. It returns
// reactor.ErrDrainDeadline when sessions were still open at the deadline.
func (p *Proxy) Shutdown(ctx context.Context) error {
	err := p.rs.Shutdown(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(err, p.probers.Stop(sctx), p.refresher.Stop(sctx), p.stopCluster(sctx))
}

// Stats sums the counters of all loops.
func (p *Proxy) Stats() proxymetrics.Stats {
	refreshed, refreshFailed := p.refresher.Counts()
	st := proxymetrics.Stats{Reactor: p.rs.Stats(), Rejected: map[string]int64{}, Ended: map[string]int64{}, Moves: map[string]int64{}, Kicks: map[string]int64{}, Bungee: map[string]int64{},
		StatusRefreshes: refreshed, StatusRefreshFailures: refreshFailed,
		HandedOver: p.handedOver.Load(), HandedOverQueued: p.handedOverQueued.Load()}
	for i := range p.loops {
		c := &p.loops[i].counters
		st.Accepted += c.accepted.Load()
		st.Active += c.active.Load()
		st.Routed += c.routed.Load()
		st.ConnectFailed += c.connectFailed.Load()
		st.BytesC2S += c.bytesC2S.Load()
		st.BytesS2C += c.bytesS2C.Load()
		st.FramesC2S += c.framesC2S.Load()
		st.FramesS2C += c.framesS2C.Load()
		st.Unframed += c.unframed.Load()
		st.StatusCached += c.statusCached.Load()
		st.StatusWaited += c.statusWaited.Load()
		reasons.AddCounts(st.Rejected, &c.rejected)
		reasons.AddCounts(st.Ended, &c.ended)
		c.moves.AddTo(st.Moves)
		c.kicks.AddTo(st.Kicks)
		p.loops[i].bungee.Counts.AddTo(st.Bungee)
	}
	return st
}

// activeSessions is Stats().Active without the rest of Stats (maps and the
// reactor's counters), for a hand-over that reads it every few milliseconds.
func (p *Proxy) activeSessions() int64 {
	var n int64
	for i := range p.loops {
		n += p.loops[i].counters.active.Load()
	}
	return n
}

func (p *Proxy) loopOf(c *reactor.Conn) *loopState {
	return &p.loops[c.Loop().Index()%len(p.loops)]
}

// admit applies the session limits, the process's buffer budget first
// (inputbudget.go); it returns the reason for a refusal.
func (p *Proxy) admit(gen *generation, ip string) (reasons.Reason, bool) {
	if bufferbudget.Over(gen.cfg.Limits.BufferBudget) {
		return reasons.BufferBudget, false
	}
	if r, ok := p.src.Admit(&gen.cfg.Limits, ip); !ok {
		return r, false
	}
	if most := gen.cfg.Limits.MaxSessionsPerIP; most > 0 && !p.perIP.Enter(ip, most) {
		p.src.Release(&gen.cfg.Limits, ip)
		return reasons.MaxSessionsPerIP, false
	}
	return 0, true
}

// admitAdopted counts a session taken over from another process against its
// IP, without refusing it: it was admitted there.
func (p *Proxy) admitAdopted(gen *generation, ip string) {
	p.src.Adopt(&gen.cfg.Limits, ip)
	if gen.cfg.Limits.MaxSessionsPerIP > 0 {
		p.perIP.Add(ip)
	}
}

// release undoes admit, under the configuration that admitted the session.
func (p *Proxy) release(gen *generation, ip string) {
	p.src.Release(&gen.cfg.Limits, ip)
	if gen.cfg.Limits.MaxSessionsPerIP > 0 {
		p.perIP.Leave(ip)
	}
}

func remoteIP(c *reactor.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return ""
}
