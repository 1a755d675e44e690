package proxy

import (
	"time"
)

// Backend health is a circuit breaker per backend. Its state word,
// backend.state, is one int64 changed only by atomic operations, so the
// event loops and the active checkers share it without locks:
//
//	0        up: sessions pick it by weight
//	t > 0    down until t (router clock, unix ns): no session dials it;
//	         from t on, the first pick (or active check) that swaps the
//	         word for a probe lease is the one probe
//	-t < 0   probing until t: one connect or check decides; success makes
//	         it up, failure down for another cooldown. A probe not decided
//	         by t (which should not happen: connects and checks time out)
//	         lets another one take over.
//
// A backend that is up goes down after health.failures consecutive failed
// connects or active checks. Any successful connect or check makes it up.
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

// markUp records a successful connect or check; it reports whether the
// backend was not up before. It writes only when something changes, since
// every loop calls it for every session.
func (b *backend) markUp() bool {
	if b.failures.Load() != 0 {
		b.failures.Store(0)
	}
	return b.state.Load() != stateUp && b.state.Swap(stateUp) != stateUp
}

// markFailed records a failed connect or check at now. A probe's failure
// marks the backend down for another cooldown; otherwise the Failures-th
// failure in a row of a backend that is up marks it down. It reports
// whether the backend was marked down.
func (b *backend) markFailed(h HealthConfig, now int64, probe bool) bool {
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

// healthError is a backend's last failure.
type healthError struct {
	msg string
	at  int64 // router clock
}

func (b *backend) setError(now int64, err error) {
	b.lastErr.Store(&healthError{msg: err.Error(), at: now})
}

// BackendStatus is one backend's health, as BackendHealth reports it.
type BackendStatus struct {
	// Group is the name of the backend's group.
	Group string `json:"group"`
	// Addr is the backend's address as configured.
	Addr string `json:"addr"`
	// Up is true when sessions may be sent to the backend.
	Up bool `json:"up"`
	// Probing is true while one connect or check decides whether a
	// backend whose cooldown has ended is back.
	Probing bool `json:"probing,omitempty"`
	// DownUntil is when the cooldown of a down backend ends; zero when up
	// or probing.
	DownUntil time.Time `json:"down_until,omitzero"`
	// Failures counts consecutive failed connects and checks.
	Failures int `json:"failures"`
	// Sessions is the number of sessions relayed to the backend now.
	Sessions int64 `json:"sessions"`
	// ConnectFailures counts session connects that failed or timed out.
	ConnectFailures int64 `json:"connect_failures"`
	// ChecksOK and ChecksFailed count active checks.
	ChecksOK     int64 `json:"checks_ok"`
	ChecksFailed int64 `json:"checks_failed"`
	// Latency is the duration of the last successful active check (connect,
	// and for status checks the status exchange), LatencyEWMA an
	// exponentially weighted average of them; both 0 before the first.
	Latency     time.Duration `json:"latency_ns"`
	LatencyEWMA time.Duration `json:"latency_ewma_ns"`
	// LastError is the last failed connect or check, at LastErrorAt; it is
	// kept after the backend recovers.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// BackendHealth returns the health of every backend, ordered by group
// name and then as configured. It may be called from any goroutine.
func (p *Proxy) BackendHealth() []BackendStatus {
	var out []BackendStatus
	for _, g := range p.router.ordered {
		for _, b := range g.backends {
			out = append(out, b.status())
		}
	}
	return out
}

func (b *backend) status() BackendStatus {
	st := BackendStatus{
		Group:           b.group.name,
		Addr:            b.addr,
		Failures:        int(b.failures.Load()),
		Sessions:        b.active.Load(),
		ConnectFailures: b.connectFailures.Load(),
		ChecksOK:        b.checksOK.Load(),
		ChecksFailed:    b.checksFailed.Load(),
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
	for _, g := range p.router.ordered {
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
