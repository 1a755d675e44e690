package proxy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/status"
)

// generation is one loaded configuration and what is built from it. A
// session keeps the generation it started under for its whole life, so a
// reload changes nothing for sessions already open.
type generation struct {
	cfg *config.Config
	// byIndex maps a reactor listener index (Conn.Listener) to its listener:
	// those of cfg, and those removed by a reload, for the connections they
	// accepted just before.
	byIndex            map[int]*config.ListenerConfig
	live               []int // the reactor index of each of cfg.Listeners
	router             *router
	raw                map[*config.ListenerConfig]*group // raw listeners' groups
	shutdownDisconnect []byte                            // the login disconnect at a drain deadline
	unknownHost        *status.Reply                     // the status answer for a host without a route
	hash               string                            // of the configuration, for logs and metrics
	usernames          *mc.UsernamePolicy                // limits.username_pattern, compiled once

	proxyIn map[*config.ListenerConfig]*config.ProxyAccept // listeners that take a PROXY header (proxyproto.go)
}

// newGeneration builds a generation from a validated cfg whose listeners
// have the reactor indices live, for a proxy with loops event loops.
// Backends that old has too (same group, same address) keep their health
// state and session counts.
func newGeneration(cfg *config.Config, old *generation, live []int, loops int) *generation {
	var prev *router
	if old != nil {
		prev = old.router
	}
	g := &generation{
		cfg:                cfg,
		router:             newRouter(cfg, prev, loops),
		raw:                map[*config.ListenerConfig]*group{},
		shutdownDisconnect: mc.AppendLoginDisconnect(nil, status.ChatJSON(cfg.Shutdown.Message)),
		unknownHost:        status.Offline(cfg.Status.Offline, status.UnknownHostText),
		hash:               cfg.Hash(),
		usernames:          mc.UsernamePolicyOrDefault(cfg.Limits.UsernamePattern),
		byIndex:            map[int]*config.ListenerConfig{},
		live:               live,
	}
	if old != nil {
		for i, l := range old.byIndex {
			g.byIndex[i] = l
		}
	}
	for i := range cfg.Listeners {
		l := &cfg.Listeners[i]
		g.byIndex[live[i]] = l
		if l.Mode == config.ModeRaw {
			g.raw[l] = g.router.groups[l.Group]
		}
	}
	g.proxyIn = config.ProxyAccepts(g.byIndex)
	if old != nil { // removed listeners keep their old group for late arrivals
		for _, l := range old.byIndex {
			if _, ok := g.raw[l]; !ok && l.Mode == config.ModeRaw {
				if grp := g.router.groups[l.Group]; grp != nil {
					g.raw[l] = grp
				} else {
					g.raw[l] = old.raw[l]
				}
			}
		}
	}
	return g
}

// indices returns 0..n-1, the reactor indices of the listeners a proxy starts with.
func indices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// ListenAddrs returns the configured address of each listener accepting
// now, by reactor index (see reactor.Server.ListenerFiles).
func (p *Proxy) ListenAddrs() map[int]string {
	g := p.cur()
	out := make(map[int]string, len(g.live))
	for i, idx := range g.live {
		out[idx] = g.cfg.Listeners[i].Listen
	}
	return out
}

// cur returns the generation new sessions start under.
func (p *Proxy) cur() *generation { return p.gen.Load() }

// listenerOf returns the listener that accepted c.
func (g *generation) listenerOf(c *reactor.Conn) *config.ListenerConfig {
	if l, ok := g.byIndex[c.Listener()]; ok {
		return l
	}
	return &g.cfg.Listeners[0]
}

// ConfigHash returns the hash of the configuration new sessions start under.
func (p *Proxy) ConfigHash() string { return p.cur().hash }

// ReloadError says why a configuration could not be taken on by Reload; the
// running configuration stays.
type ReloadError struct {
	// Problems lists every reason, one per entry.
	Problems []string
}

func (e *ReloadError) Error() string {
	return "proxy: reload refused, the running configuration stays: " + strings.Join(e.Problems, "; ")
}

// Reload makes cfg the configuration of new sessions: routes, groups,
// backends and their weights, forwarding, session limits and timeouts,
// health settings and messages. Sessions already open keep the
// configuration they started under. What only a restart can change
// (listeners, loops, reuse_port, and the limits the event loops enforce:
// max_sessions, watermarks, buffer_budget, linger) must be as running, or
// the reload is refused with a *ReloadError naming each difference. Health
// checks restart under the new settings; backends kept keep their state.
// A cfg with the running configuration's hash changes nothing (the groups'
// status caches stay) and counts as a successful reload.
// While a live upgrade hands this proxy's sessions over (HoldReloads), a
// reload is refused too.
func (p *Proxy) Reload(cfg *config.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	if p.reloadHolds.Load() > 0 {
		return &ReloadError{Problems: []string{errReloadDuringUpgrade}}
	}
	old := p.cur()
	// The same configuration again (a SIGHUP or POST /-/reload with the file
	// untouched) keeps the running generation whole: a new one would give
	// every group a new, empty status cache and restart the health checks
	// for nothing.
	if hash := cfg.Hash(); hash == old.hash {
		p.reloads[0].Add(1)
		p.log.Info().Str("config_hash", hash).Msg("configuration reloaded unchanged: the running one stays as it is")
		return nil
	}
	if problems := old.cfg.RestartChanges(cfg); len(problems) > 0 {
		return &ReloadError{Problems: problems}
	}
	live, added, removed, err := p.reloadListeners(old, cfg)
	if err != nil {
		return err
	}
	if testHookListenersOpened != nil {
		testHookListenersOpened()
	}
	gen := newGeneration(cfg, old, live, len(p.loops))
	gen.router.now = old.router.now
	// The old checkers stop before the new ones start, so that a backend
	// kept is never checked twice at once.
	if err = p.probers.Replace(5*time.Second, func() { p.gen.Store(gen) }, p.newProbes); err != nil {
		p.log.Warn().Err(err).Msg("reload: the previous health checkers did not stop in time")
	}
	// Only now that the generation that routes them is in place: a session
	// accepted before would take the old one, which does not know its
	// listener, and keep Listeners[0]'s mode and group for its life.
	for _, idx := range added {
		if err := p.rs.StartListener(idx); err != nil {
			p.log.Warn().Err(err).Int("index", idx).Msg("reload: an added listener cannot accept (the proxy is stopping)")
		}
	}
	for _, idx := range removed {
		if err := p.rs.RemoveListener(idx); err != nil {
			p.log.Warn().Err(err).Int("index", idx).Msg("reload: closing a removed listener")
		} else {
			p.log.Info().Str("listen", old.byIndex[idx].Listen).Msg("reload: listener removed; its sessions go on")
		}
	}
	p.reloads[0].Add(1)
	p.log.Info().Str("config_hash", gen.hash).Str("previous_hash", old.hash).
		Int("groups", len(cfg.Groups)).Int("routes", len(cfg.Routes)).
		Msg("configuration reloaded: new sessions use it, open sessions keep theirs")
	return nil
}

// errReloadDuringUpgrade is why a reload is refused during a live upgrade:
// a listener added here would be served by neither process afterwards (the
// new one took those there were at its start).
const errReloadDuringUpgrade = "a live upgrade is handing the sessions over to a new process: reload that one once it serves"

// HoldReloads refuses reloads (as a *ReloadError) until release is called
// (once), for a live upgrade from its start; HandOver holds them too.
func (p *Proxy) HoldReloads() (release func()) {
	p.reloadMu.Lock() // a reload under way finishes first
	p.reloadHolds.Add(1)
	p.reloadMu.Unlock()
	return func() { p.reloadHolds.Add(-1) }
}

// CountFailedReload counts a reload that failed, in Reload or before it
// (a configuration that did not load); Reloads reports the count.
func (p *Proxy) CountFailedReload() { p.reloads[1].Add(1) }

// Reloads returns how many reloads succeeded and failed.
func (p *Proxy) Reloads() (ok, failed int64) { return p.reloads[0].Load(), p.reloads[1].Load() }

// reloadListeners opens the listeners cfg adds (a listener is kept when an
// accepting one has the same address and mode) and returns the reactor index
// of each of cfg.Listeners, those of the added ones, which accept once the
// new generation is in place, and those of the old listeners to close then. If one cannot be opened, those opened are
// closed again and the reload is refused.
func (p *Proxy) reloadListeners(old *generation, cfg *config.Config) (live, added, removed []int, err error) {
	live = config.KeptListeners(old.cfg.Listeners, old.live, cfg.Listeners)
	for i, y := range cfg.Listeners {
		if live[i] >= 0 {
			continue
		}
		if live[i], err = p.rs.OpenListener("tcp://" + y.Listen); err != nil {
			for _, a := range added {
				_ = p.rs.RemoveListener(a)
			}
			return nil, nil, nil, &ReloadError{Problems: []string{fmt.Sprintf("listeners[%d]: %v", i, err)}}
		}
		added = append(added, live[i])
		p.log.Info().Str("listen", y.Listen).Str("mode", string(y.Mode)).Int("index", live[i]).Msg("reload: listener added")
	}
	for _, oi := range old.live {
		if !slices.Contains(live, oi) {
			removed = append(removed, oi)
		}
	}
	return live, added, removed, nil
}

// testHookListenersOpened, when a test sets it, runs in Reload once the
// added listeners are bound and before the new generation is stored.
var testHookListenersOpened func()
