package proxy

import (
	"maps"
	"slices"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/protocol/proxyproto"
	"github.com/tidegate/tidegate/session/proxy/balance"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/login"
	"github.com/tidegate/tidegate/session/proxy/probe"
	"github.com/tidegate/tidegate/session/proxy/status"
	"github.com/tidegate/tidegate/session/proxy/vhost"
)

// backend is one backend server of a group in one configuration, and its
// health (see probe.go), which a reload keeps when the backend stays.
type backend struct {
	addr   string
	weight int
	group  *group
	*backendHealth
}

// backendHealth is the state of a backend that outlives a reload. It is
// an alias, so that a backend embeds it under this name.
type backendHealth = probe.Health

// group is a set of interchangeable backends chosen by weight.
type group struct {
	name     string
	backends []*backend
	strategy config.Strategy
	rr       balance.RoundRobin // round-robin: one position per event loop

	routed    bool             // some listener can send sessions here
	probeKind config.ProbeKind // active probe kind, config.ProbeTCP or config.ProbeStatus

	sendPP proxyproto.Versions // PROXY header version its backends get; 0 for none
	bungee bool                // BungeeCord forwarding in the handshake
	login  *login.Settings     // a login the proxy completes; nil to relay it untouched

	offlineDisconnect []byte       // login Disconnect frame with the offline message
	status            *groupStatus // status answers: the cache and the offline answer (status.go)
}

// route is where a virtual host goes: a group, and how the handshake's
// server address is rewritten toward its backend.
type route struct {
	group *group
	// rewriteHost replaces the host of the handshake address (its Forge
	// marker kept); nil leaves the address as the client sent it.
	rewriteHost []byte
	rewritePort uint16 // replaces the handshake's port; 0 keeps it
}

// router maps virtual hosts to groups.
type router struct {
	hosts   vhost.Table[*route]
	def     *route // default_group, or nil
	groups  map[string]*group
	ordered []*group // groups by name
	health  config.ProbeConfig
	// now is the clock of the health state, unix nanoseconds. Tests may
	// replace it before the proxy starts.
	now func() int64
	// lease is how long a probe may stay unanswered before another
	// session or active probe may take over (a safety net: every probe ends).
	lease int64
}

// newRouter builds the router of cfg for a proxy with loops event loops;
// the backends that prev has in a group of the same name keep their health.
func newRouter(cfg *config.Config, prev *router, loops int) *router {
	h := cfg.Probes
	r := &router{
		groups: map[string]*group{}, health: h, now: nowUnix,
		lease: int64(max(cfg.Limits.ConnectTimeout, h.Timeout) + 5*time.Second),
	}
	routed := cfg.RoutedGroups()
	for _, name := range slices.Sorted(maps.Keys(cfg.Groups)) {
		gc := cfg.Groups[name]
		g := &group{
			name:              name,
			offlineDisconnect: mc.AppendLoginDisconnect(nil, status.ChatJSON(cfg.OfflineMessage(gc))),
			strategy:          gc.Strategy,
		}
		g.probeKind, g.routed = cfg.ProbeKindOf(routed, name)
		g.status = status.NewGroup[*statusWaiter](cfg.Status.Offline, cfg.OfflineMOTD(gc))
		g.sendPP = gc.SendVersions()
		g.bungee, g.login = cfg.ForwardingOf(gc) == config.ForwardBungeeCord, login.NewSettings(cfg, gc)
		for _, b := range gc.Backends {
			if b.Weight > 0 {
				g.backends = append(g.backends, &backend{addr: b.Addr, weight: b.Weight, group: g, backendHealth: prev.healthOf(name, b.Addr)})
			}
		}
		if g.strategy == config.StrategyRoundRobin {
			g.rr = balance.NewRoundRobin(loops, len(g.backends))
		}
		r.groups[name] = g
		r.ordered = append(r.ordered, g)
	}
	for _, rc := range cfg.Routes {
		rt := &route{group: r.groups[rc.Group]}
		if rc.RewriteHost != "" {
			host, port := rc.Rewrite()
			rt.rewriteHost, rt.rewritePort = []byte(host), port
		}
		for _, h := range rc.Hosts {
			r.hosts.Add(config.NormalizeHost(h), rt)
		}
	}
	if cfg.DefaultGroup != "" {
		r.def = &route{group: r.groups[cfg.DefaultGroup]}
	}
	return r
}

// healthOf returns the health of the backend addr in group name, or a new
// one when r (which may be nil) has no such backend.
func (r *router) healthOf(name, addr string) *backendHealth {
	if r != nil {
		if g := r.groups[name]; g != nil {
			for _, b := range g.backends {
				if b.addr == addr {
					return b.backendHealth
				}
			}
		}
	}
	return &backendHealth{}
}

// route returns the route of a normalized host (see vhost.Table.Lookup),
// else the default group's, else nil. It does not allocate.
func (r *router) route(host []byte) *route {
	if rt, ok := r.hosts.Lookup(host); ok {
		return rt
	}
	return r.def
}

// pick chooses a backend of g that is up, or a probe, by its strategy
// (see balance.Pick); nil means no backend is up.
func (g *group) pick(rnd *uint64, loop int, now, lease int64) (b *backend, probe bool) {
	return balance.Pick(g.strategy, g.rr, g.backends, rnd, loop, now, lease)
}

func nowUnix() int64 { return time.Now().UnixNano() }
