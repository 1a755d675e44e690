package proxy

import (
	"context"

	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/probe"
)

// Backend health: each backend's circuit breaker and counters are a
// probe.Health, which the sessions' connects and the active probes here
// feed.

// BackendHealth returns the health of every backend, ordered by group
// name and then as configured. It may be called from any goroutine.
func (p *Proxy) BackendHealth() []admin.BackendStatus {
	var out []admin.BackendStatus
	for _, g := range p.cur().router.ordered {
		for _, b := range g.backends {
			out = append(out, b.Status(b.group.name, b.addr))
		}
	}
	return out
}

// GroupsDown returns, sorted, every group that some listener sends
// sessions to (the default group and the routes' groups when there is a
// minecraft listener, the group of every raw listener) and that has no
// backend up. It may be called from any goroutine.
func (p *Proxy) GroupsDown() []string {
	down := []string{}
	for _, g := range p.cur().router.ordered {
		if g.routed && !g.anyUp() {
			down = append(down, g.name)
		}
	}
	return down
}

func (g *group) anyUp() bool {
	for _, b := range g.backends {
		if b.Up() {
			return true
		}
	}
	return false
}

// newProbes starts the probers of the current configuration when its
// health.interval is set (p.probers runs it).
func (p *Proxy) newProbes() *probe.Runner {
	gen := p.cur()
	if gen.cfg.Probes.Interval <= 0 {
		return nil
	}
	var all []*backend
	for _, g := range gen.router.ordered {
		all = append(all, g.backends...)
	}
	return probe.Start(gen.cfg.Probes.Interval, all, func(ctx context.Context, b *backend) { p.probeOnce(ctx, gen, b) })
}

// probeOnce runs one active probe of b under gen and records its result
// (probe.Once).
func (p *Proxy) probeOnce(ctx context.Context, gen *generation, b *backend) {
	t := probe.Target{Group: b.group.name, Addr: b.addr, Kind: b.group.probeKind, PP: b.group.sendPP}
	probe.Once(ctx, b.backendHealth, t, gen.cfg.Probes, gen.router.now, gen.router.lease, &p.log)
}
