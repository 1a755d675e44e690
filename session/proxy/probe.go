package proxy

import (
	"context"
	"time"

	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/probe"
)

// Backend health (the health: section) is a circuit breaker per backend,
// fed by the sessions' connects and by active probes: a goroutine per
// backend that connects to it every health.interval (a status ping for
// Minecraft groups). "Probe" below is also the one attempt that decides,
// once a cooldown has ended, whether the backend is back. The breaker's
// state word, backend.state, is one int64 changed only by atomic
// operations, so the event loops and the probers share it without locks:
//
//	0        up: sessions pick it by weight
//	t > 0    down until t (router clock, unix ns): no session dials it;
//	         from t on, the first pick (or active probe) that swaps the
//	         word for a probe lease is the one probe
//	-t < 0   probing until t: one connect or active probe decides; success
//	         makes it up, failure down for another cooldown. A probe not
//	         decided by t (which should not happen: connects and probes
//	         time out) lets another one take over.
//
// A backend that is up goes down after health.failures consecutive failed
// connects or active probes. Any successful connect or probe makes it up.
const stateUp = 0

// probeDue reports whether state word s allows a probe at now.
func probeDue(s, now int64) bool {
	return (s > 0 && now >= s) || (s < 0 && now >= -s)
}

// claimProbe makes the caller the backend's one probe if state word s, as
// just loaded, allows a probe at now and no one else changed it meanwhile.
func (b *backend) claimProbe(s, now, lease int64) bool {
	return probeDue(s, now) && b.state.CompareAndSwap(s, -(now+lease))
}

// markUp records a successful connect or probe; it reports whether the
// backend was not up before. It writes only when something changes, since
// every loop calls it for every session.
func (b *backend) markUp() bool {
	if b.failures.Load() != 0 {
		b.failures.Store(0)
	}
	return b.state.Load() != stateUp && b.state.Swap(stateUp) != stateUp
}

// markFailed records a failed connect or probe at now. A probe's failure
// marks the backend down for another cooldown; otherwise the Failures-th
// failure in a row of a backend that is up marks it down. It reports
// whether the backend was marked down.
func (b *backend) markFailed(h config.ProbeConfig, now int64, probe bool) bool {
	n := b.failures.Add(1)
	until := now + int64(h.Cooldown)
	if probe {
		b.state.Store(until)
		return true
	}
	return int(n) >= h.Failures && b.state.CompareAndSwap(stateUp, until)
}

// dropProbe gives back a probe that ended undecided (its session went away
// before the connect did): the cooldown counts as over, so the next pick
// probes.
func (b *backend) dropProbe(now int64) {
	if s := b.state.Load(); s < 0 {
		b.state.CompareAndSwap(s, max(now, 1))
	}
}

// lastFailure is a backend's last failure.
type lastFailure struct {
	msg string
	at  int64 // router clock
}

func (b *backend) setError(now int64, err error) {
	b.lastErr.Store(&lastFailure{msg: err.Error(), at: now})
}

// recordLatency adds a successful probe's latency to the last value and
// the EWMA (weight 1/4 for the new sample). Only the backend's prober
// writes them.
func (b *backend) recordLatency(d time.Duration) {
	b.lastLatency.Store(int64(d))
	avg := b.avgLatency.Load()
	if avg == 0 {
		avg = int64(d)
	} else {
		avg += (int64(d) - avg) / 4
	}
	b.avgLatency.Store(max(avg, 1))
}

// BackendHealth returns the health of every backend, ordered by group
// name and then as configured. It may be called from any goroutine.
func (p *Proxy) BackendHealth() []admin.BackendStatus {
	var out []admin.BackendStatus
	for _, g := range p.cur().router.ordered {
		for _, b := range g.backends {
			out = append(out, b.status())
		}
	}
	return out
}

func (b *backend) status() admin.BackendStatus {
	st := admin.BackendStatus{
		Group:           b.group.name,
		Addr:            b.addr,
		Failures:        int(b.failures.Load()),
		Sessions:        b.active.Load(),
		ConnectFailures: b.connectFailures.Load(),
		ProbesOK:        b.probesOK.Load(),
		ProbesFailed:    b.probesFailed.Load(),
		Latency:         time.Duration(b.lastLatency.Load()),
		LatencyEWMA:     time.Duration(b.avgLatency.Load()),
	}
	switch s := b.state.Load(); {
	case s == stateUp:
		st.Up = true
	case s < 0:
		st.Probing = true
	default:
		st.DownUntil = time.Unix(0, s)
	}
	if e := b.lastErr.Load(); e != nil {
		st.LastError, st.LastErrorAt = e.msg, time.Unix(0, e.at)
	}
	return st
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
		if b.state.Load() == stateUp {
			return true
		}
	}
	return false
}

// startProbes starts the probers of the current configuration
// when its health.interval is set.
func (p *Proxy) startProbes() {
	p.probesMu.Lock()
	defer p.probesMu.Unlock()
	p.startProbesLocked()
}

func (p *Proxy) startProbesLocked() {
	gen := p.cur()
	if gen.cfg.Probes.Interval <= 0 || p.probesEnded {
		return
	}
	var all []*backend
	for _, g := range gen.router.ordered {
		all = append(all, g.backends...)
	}
	p.probes = probe.Start(gen.cfg.Probes.Interval, all, func(ctx context.Context, b *backend) { p.probeOnce(ctx, gen, b) })
}

// stopProbes stops the probers for good and waits for them until
// ctx ends.
func (p *Proxy) stopProbes(ctx context.Context) error {
	p.probesMu.Lock()
	defer p.probesMu.Unlock()
	p.probesEnded = true
	return p.stopProbesLocked(ctx)
}

func (p *Proxy) stopProbesLocked(ctx context.Context) error {
	if p.probes == nil {
		return nil
	}
	if err := p.probes.Stop(ctx); err != nil {
		return err
	}
	p.probes = nil
	return nil
}

// probeOnce runs one active probe of b and records its result. When b's
// cooldown has ended it is the probe that decides whether b is back.
func (p *Proxy) probeOnce(ctx context.Context, gen *generation, b *backend) {
	r, h := gen.router, gen.cfg.Probes
	decides := b.claimProbe(b.state.Load(), r.now(), r.lease)
	d, err := probe.Check(ctx, b.addr, b.group.probeKind, h.Timeout, b.group.sendPP)
	now := r.now()
	if ctx.Err() != nil { // stopping: says nothing about the backend
		if decides {
			b.dropProbe(now)
		}
		return
	}
	log := p.log.With().Str("group", b.group.name).Str("backend", b.addr).Str("check", string(b.group.probeKind)).Logger()
	if err != nil {
		b.probesFailed.Add(1)
		b.setError(now, err)
		if b.markFailed(h, now, decides) {
			log.Warn().Err(err).Int32("failures", b.failures.Load()).Dur("cooldown", h.Cooldown).Msg("backend marked down")
		} else {
			log.Debug().Err(err).Msg("backend check failed")
		}
		return
	}
	b.probesOK.Add(1)
	b.recordLatency(d)
	if b.markUp() {
		log.Info().Dur("latency", d).Msg("backend up")
	}
}
