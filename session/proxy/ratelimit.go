package proxy

import (
	"time"

	"github.com/rs/zerolog"
	"github.com/tidegate/tidegate/session/proxy/ratelimit"
)

// The limits per client address (package ratelimit) as sessions are
// admitted, and the sampling of the refusals' logs.

// RateLimitAddresses returns how many client addresses have connection or
// login buckets now (limits.rate_limit_addresses bounds them), and how many
// buckets not yet refilled were dropped to keep within that bound.
func (p *Proxy) RateLimitAddresses() (tracked, evicted int64) {
	return p.src.Tracked(), p.src.Evicted()
}

// admitSource applies the per-address limits of gen to a new connection
// from ip: the connection rate, then the subnet's session cap. When it
// admits, the session is counted in its subnet until releaseSource.
func (p *Proxy) admitSource(gen *generation, ip string) (reason, bool) {
	a, ok := ratelimit.SourceAddr(ip)
	if !ok {
		return 0, true
	}
	lim := &gen.cfg.Limits
	if lim.ConnectionRate > 0 && !p.src.Take(ratelimit.RateKey(a), false, lim.ConnectionRate, lim.ConnectionBurst, lim.RateLimitAddresses, p.src.Now()) {
		return reasonConnectionRate, false
	}
	if !p.src.Enter(ratelimit.SubnetKey(a, lim), lim.MaxSessionsPerSubnet) {
		return reasonMaxSessionsPerSubnet, false
	}
	return 0, true
}

// adoptSource counts a session taken over from another process in its
// subnet, without refusing it: it was admitted there.
func (p *Proxy) adoptSource(gen *generation, ip string) {
	if a, ok := ratelimit.SourceAddr(ip); ok {
		p.src.Enter(ratelimit.SubnetKey(a, &gen.cfg.Limits), 0)
	}
}

// releaseSource undoes admitSource (or adoptSource) under the generation
// that admitted the session.
func (p *Proxy) releaseSource(gen *generation, ip string) {
	if a, ok := ratelimit.SourceAddr(ip); ok {
		p.src.Leave(ratelimit.SubnetKey(a, &gen.cfg.Limits))
	}
}

// admitLogin applies the login rate of gen to a login from ip.
func (p *Proxy) admitLogin(gen *generation, ip string) (reason, bool) {
	lim := &gen.cfg.Limits
	if lim.LoginRate <= 0 {
		return 0, true
	}
	a, ok := ratelimit.SourceAddr(ip)
	if ok && !p.src.Take(ratelimit.RateKey(a), true, lim.LoginRate, lim.LoginBurst, lim.RateLimitAddresses, p.src.Now()) {
		return reasonLoginRate, false
	}
	return 0, true
}

// refusalEvent returns the log event for a refusal by r: a warning; for the
// per-address limits, which a flood trips many times a second, at most one
// warning a second per reason (with how many were left out since, as
// "suppressed") and debug events for the others.
func (p *Proxy) refusalEvent(r reason) *zerolog.Event {
	switch r {
	case reasonConnectionRate, reasonLoginRate, reasonMaxSessionsPerSubnet:
	default:
		return p.log.Warn()
	}
	now := p.src.Now()
	if next := p.refusalLogNext[r].Load(); now >= next && p.refusalLogNext[r].CompareAndSwap(next, now+int64(time.Second)) {
		ev := p.log.Warn()
		if n := p.refusalLogSkipped[r].Swap(0); n > 0 {
			ev = ev.Int64("suppressed", n)
		}
		return ev
	}
	p.refusalLogSkipped[r].Add(1)
	return p.log.Debug()
}
