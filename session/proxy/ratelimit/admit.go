package ratelimit

import (
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// Admit applies the per-address limits lim to a new connection from ip:
// the connection rates of its address and its subnet, then the subnet's
// session cap. When it admits, the session is counted in its subnet until
// Release.
func (l *Limiter) Admit(lim *config.Limits, ip string) (reasons.Reason, bool) {
	a, ok := SourceAddr(ip)
	if !ok {
		return 0, true
	}
	src := SourceKeys(a, lim)
	switch l.TakeConnection(src, lim) {
	case AddressFull:
		return reasons.ConnectionRate, false
	case SubnetFull:
		return reasons.ConnectionRateSubnet, false
	}
	if !l.Enter(src.Subnet, lim.MaxSessionsPerSubnet) {
		return reasons.MaxSessionsPerSubnet, false
	}
	return 0, true
}

// Adopt counts a session taken over from another process in its subnet,
// without refusing it: it was admitted there.
func (l *Limiter) Adopt(lim *config.Limits, ip string) {
	if a, ok := SourceAddr(ip); ok {
		l.Enter(SubnetKey(a, lim), 0)
	}
}

// Release undoes Admit (or Adopt) under the limits lim that admitted the
// session.
func (l *Limiter) Release(lim *config.Limits, ip string) {
	if a, ok := SourceAddr(ip); ok {
		l.Leave(SubnetKey(a, lim))
	}
}

// AdmitLogin applies the login rates of lim (the address's and the
// subnet's) to a login from ip.
func (l *Limiter) AdmitLogin(lim *config.Limits, ip string) (reasons.Reason, bool) {
	a, ok := SourceAddr(ip)
	if !ok || (lim.LoginRate <= 0 && lim.SubnetLoginRate <= 0) {
		return 0, true
	}
	switch l.TakeLogin(SourceKeys(a, lim), lim) {
	case AddressFull:
		return reasons.LoginRate, false
	case SubnetFull:
		return reasons.LoginRateSubnet, false
	}
	return 0, true
}

// RefusalLog samples the logs of the flood-prone refusals: when the next
// warning of each reason may be written, and how many were left out since
// the last.
type RefusalLog struct {
	next, skipped [reasons.Count]atomic.Int64
}

// Event returns the log event of log for a refusal by r at now (the
// Limiter's clock): a warning; for the per-address limits, which a flood
// trips many times a second, at most one warning a second per
// reasons.Reason (with how many were left out since, as "suppressed") and
// debug events for the others.
func (rl *RefusalLog) Event(log *zerolog.Logger, now int64, r reasons.Reason) *zerolog.Event {
	switch r {
	case reasons.ConnectionRate, reasons.LoginRate, reasons.MaxSessionsPerSubnet, reasons.ConnectionRateSubnet, reasons.LoginRateSubnet,
		reasons.BufferBudget:
	default:
		return log.Warn()
	}
	if next := rl.next[r].Load(); now >= next && rl.next[r].CompareAndSwap(next, now+int64(time.Second)) {
		ev := log.Warn()
		if n := rl.skipped[r].Swap(0); n > 0 {
			ev = ev.Int64("suppressed", n)
		}
		return ev
	}
	rl.skipped[r].Add(1)
	return log.Debug()
}
