package proxy

import (
	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// The limits per client address (package ratelimit, which applies them as
// sessions are admitted and samples the refusals' logs).

// RateLimitAddresses returns how many rate buckets (client addresses' and
// subnets') are kept now (limits.rate_limit_addresses bounds them), how
// many buckets not yet refilled were dropped to keep within that bound, and
// how many takes went to a subnet's shared bucket because the subnet held
// limits.rate_limit_per_subnet address buckets already.
func (p *Proxy) RateLimitAddresses() (tracked, evicted, untracked int64) {
	return p.src.Tracked(), p.src.Evicted(), p.src.Untracked()
}

// refusalEvent returns the log event for a refusal by r, sampled for the
// flood-prone reasons (ratelimit.RefusalLog).
func (p *Proxy) refusalEvent(r reasons.Reason) *zerolog.Event {
	return p.refusals.Event(&p.log, p.src.Now(), r)
}
