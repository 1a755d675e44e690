package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
)

// generation is one loaded configuration and what is built from it. A
// session keeps the generation it started under for its whole life, so a
// reload changes nothing for sessions already open.
type generation struct {
	cfg                *Config
	router             *router
	raw                map[*ListenerConfig]*group // raw listeners' groups
	shutdownDisconnect []byte                     // the login disconnect at a drain deadline
	hash               string                     // of the configuration, for logs and metrics
}

// newGeneration builds a generation from a validated cfg. Backends that
// old has too (same group, same address) keep their health state and
// session counts.
func newGeneration(cfg *Config, old *generation) *generation {
	var prev *router
	if old != nil {
		prev = old.router
	}
	g := &generation{
		cfg:                cfg,
		router:             newRouter(cfg, prev),
		raw:                map[*ListenerConfig]*group{},
		shutdownDisconnect: mc.AppendLoginDisconnect(nil, chatJSON(cfg.Shutdown.Message)),
		hash:               cfg.Hash(),
	}
	for i := range cfg.Listeners {
		if l := &cfg.Listeners[i]; l.Mode == ModeRaw {
			g.raw[l] = g.router.groups[l.Group]
		}
	}
	return g
}

// cur returns the generation new sessions start under.
func (p *Proxy) cur() *generation { return p.gen.Load() }

// listenerOf returns the listener that accepted c.
func (g *generation) listenerOf(c *reactor.Conn) *ListenerConfig {
	if i := c.Listener(); i >= 0 && i < len(g.cfg.Listeners) {
		return &g.cfg.Listeners[i]
	}
	return &g.cfg.Listeners[0]
}

// Hash returns a short digest of the configuration as the proxy uses it
// (after defaults), which logs and metrics show to tell configurations apart.
func (c *Config) Hash() string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%#v", *c))
	return hex.EncodeToString(sum[:6])
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
func (p *Proxy) Reload(cfg *Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	old := p.cur()
	if problems := restartOnly(old.cfg, cfg); len(problems) > 0 {
		return &ReloadError{Problems: problems}
	}
	gen := newGeneration(cfg, old)
	gen.router.now = old.router.now
	// The old checkers stop before the new ones start, so that a backend
	// kept is never checked twice at once.
	p.checksMu.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := p.stopChecksLocked(ctx)
	cancel()
	p.gen.Store(gen)
	p.startChecksLocked()
	p.checksMu.Unlock()
	if err != nil {
		p.log.Warn().Err(err).Msg("reload: the previous health checkers did not stop in time")
	}
	p.reloads[0].Add(1)
	p.log.Info().Str("config_hash", gen.hash).Str("previous_hash", old.hash).
		Int("groups", len(cfg.Groups)).Int("routes", len(cfg.Routes)).
		Msg("configuration reloaded: new sessions use it, open sessions keep theirs")
	return nil
}

// CountFailedReload counts a reload that failed, in Reload or before it
// (a configuration that did not load); Reloads reports the count.
func (p *Proxy) CountFailedReload() { p.reloads[1].Add(1) }

// Reloads returns how many reloads succeeded and failed.
func (p *Proxy) Reloads() (ok, failed int64) { return p.reloads[0].Load(), p.reloads[1].Load() }

// restartOnly lists what differs between a and b that a reload cannot change.
func restartOnly(a, b *Config) []string {
	var out []string
	if len(a.Listeners) != len(b.Listeners) {
		out = append(out, fmt.Sprintf("listeners: %d configured, %d running (adding or removing a listener needs a restart)", len(b.Listeners), len(a.Listeners)))
	} else {
		for i := range a.Listeners {
			if x, y := a.Listeners[i], b.Listeners[i]; x.Listen != y.Listen || x.Mode != y.Mode {
				out = append(out, fmt.Sprintf("listeners[%d]: %s %s, running %s %s (a listener's address or mode needs a restart)", i, y.Listen, y.Mode, x.Listen, x.Mode))
			}
		}
	}
	if a.Loops != b.Loops {
		out = append(out, fmt.Sprintf("loops changed from %d to %d (needs a restart)", a.Loops, b.Loops))
	}
	if a.ReusePort != b.ReusePort {
		out = append(out, "reuse_port changed (needs a restart)")
	}
	la, lb := a.Limits, b.Limits
	for _, f := range []struct {
		name string
		a, b any
	}{
		{"limits.max_sessions", la.MaxSessions, lb.MaxSessions},
		{"limits.high_watermark", la.HighWatermark, lb.HighWatermark},
		{"limits.low_watermark", la.LowWatermark, lb.LowWatermark},
		{"limits.buffer_budget", la.BufferBudget, lb.BufferBudget},
		{"limits.linger", la.Linger, lb.Linger},
	} {
		if f.a != f.b {
			out = append(out, fmt.Sprintf("%s changed from %v to %v (needs a restart)", f.name, f.a, f.b))
		}
	}
	return out
}
