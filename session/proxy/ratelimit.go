package proxy

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/session/proxy/ratelimit"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// The limits per client address (package ratelimit) as sessions are
// admitted, and the sampling of the refusals' logs.

// RateLimitAddresses returns how many rate buckets (client addresses' and
// subnets') are kept now (limits.rate_limit_addresses bounds them), how
// many buckets not yet refilled were dropped to keep within that bound, and
// how many takes went to a subnet's shared bucket because the subnet held
// limits.rate_limit_per_subnet address buckets already.
func (p *Proxy) RateLimitAddresses() (tracked, evicted, untracked int64) {
	return p.src.Tracked(), p.src.Evicted(), p.src.Untracked()
}

// admitSource applies the per-address limits of gen to a new connection
// from ip: the connection rates of its address and its subnet, then the
// subnet's session cap. When it admits, the session is counted in its
// subnet until releaseSource.
func (p *Proxy) admitSource(gen *generation, ip string) (reasons.Reason, bool) {
	a, ok := ratelimit.SourceAddr(ip)
	if !ok {
		return 0, true
	}
	lim := &gen.cfg.Limits
	src := ratelimit.SourceKeys(a, lim)
	switch p.src.TakeConnection(src, lim) {
	case ratelimit.AddressFull:
		return reasons.ConnectionRate, false
	case ratelimit.SubnetFull:
		return reasons.ConnectionRateSubnet, false
	}
	if !p.src.Enter(src.Subnet, lim.MaxSessionsPerSubnet) {
		return reasons.MaxSessionsPerSubnet, false
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

// admitLogin applies the login rates of gen (the address's and the
// subnet's) to a login from ip.
func (p *Proxy) admitLogin(gen *generation, ip string) (reasons.Reason, bool) {
	lim := &gen.cfg.Limits
	a, ok := ratelimit.SourceAddr(ip)
	if !ok || (lim.LoginRate <= 0 && lim.SubnetLoginRate <= 0) {
		return 0, true
	}
	switch p.src.TakeLogin(ratelimit.SourceKeys(a, lim), lim) {
	case ratelimit.AddressFull:
		return reasons.LoginRate, false
	case ratelimit.SubnetFull:
		return reasons.LoginRateSubnet, false
	}
	return 0, true
}

// refusalEvent returns the log event for a refusal by r: a warning; for the
// per-address limits, which a flood trips many times a second, at most one
// warning a second per reasons.Reason (with how many were left out since, as
// "suppressed") and debug events for the others.
func (p *Proxy) refusalEvent(r reasons.Reason) *zerolog.Event {
	switch r {
	case reasons.ConnectionRate, reasons.LoginRate, reasons.MaxSessionsPerSubnet, reasons.ConnectionRateSubnet, reasons.LoginRateSubnet,
		reasons.BufferBudget:
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
