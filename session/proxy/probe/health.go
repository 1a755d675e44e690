package probe

import (
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// Backend health (the health: section) is a circuit breaker per backend,
// fed by the sessions' connects and by active checks: a goroutine per
// backend that connects to it every health.interval (a status ping for
// Minecraft groups). "Probe" below is also the one attempt that decides,
// once a cooldown has ended, whether the backend is back. The breaker's
// state word, Health.state, is one int64 changed only by atomic
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

// Health is the state of one backend that outlives a reload: its circuit
// breaker and its counters. Its methods may be called from any goroutine.
type Health struct {
	state    atomic.Int64 // the circuit breaker's state word, see stateUp
	Failures atomic.Int32 // consecutive failed connects and probes
	Active   atomic.Int64 // sessions relayed to it now
	// Connecting counts sessions whose connect to it is in flight, so
	// that least-connections sees a burst of sessions it sent there.
	Connecting atomic.Int64

	ConnectFailures atomic.Int64 // session connects that failed or timed out
	probesOK        atomic.Int64 // active probes that passed
	probesFailed    atomic.Int64 // active probes that failed
	lastLatency     atomic.Int64 // ns, last successful active probe; 0 before the first
	avgLatency      atomic.Int64 // ns, EWMA of successful active probes; 0 before the first
	lastErr         atomic.Pointer[lastFailure]
}

// lastFailure is a backend's last failure.
type lastFailure struct {
	msg string
	at  int64 // router clock
}

// Up reports whether the backend may get sessions.
func (h *Health) Up() bool { return h.state.Load() == stateUp }

// Load is the number of its sessions, relayed and connecting.
func (h *Health) Load() int64 { return h.Active.Load() + h.Connecting.Load() }

// Latency is the EWMA of its active checks' latency, ns; 0 before the first.
func (h *Health) Latency() int64 { return h.avgLatency.Load() }

// probeDue reports whether state word s allows a probe at now.
func probeDue(s, now int64) bool {
	return (s > 0 && now >= s) || (s < 0 && now >= -s)
}

// Available reports whether the backend is up at now and, when it is not,
// whether the caller just became its one probe (leased for lease ns).
func (h *Health) Available(now, lease int64) (up, probe bool) {
	s := h.state.Load()
	return s == stateUp, s != stateUp && h.claim(s, now, lease)
}

// claim makes the caller the backend's one probe if state word s, as just
// loaded, allows a probe at now and no one else changed it meanwhile.
func (h *Health) claim(s, now, lease int64) bool {
	return probeDue(s, now) && h.state.CompareAndSwap(s, -(now+lease))
}

// MarkUp records a successful connect or probe; it reports whether the
// backend was not up before. It writes only when something changes, since
// every loop calls it for every session.
func (h *Health) MarkUp() bool {
	if h.Failures.Load() != 0 {
		h.Failures.Store(0)
	}
	return h.state.Load() != stateUp && h.state.Swap(stateUp) != stateUp
}

// MarkFailed records a failed connect or probe at now. A probe's failure
// marks the backend down for another cooldown; otherwise the Failures-th
// failure in a row of a backend that is up marks it down. It reports
// whether the backend was marked down.
func (h *Health) MarkFailed(cfg config.ProbeConfig, now int64, probe bool) bool {
	n := h.Failures.Add(1)
	until := now + int64(cfg.Cooldown)
	if probe {
		h.state.Store(until)
		return true
	}
	return int(n) >= cfg.Failures && h.state.CompareAndSwap(stateUp, until)
}

// DropProbe gives back a probe that ended undecided (its session went away
// before the connect did): the cooldown counts as over, so the next pick
// probes.
func (h *Health) DropProbe(now int64) {
	if s := h.state.Load(); s < 0 {
		h.state.CompareAndSwap(s, max(now, 1))
	}
}

// SetError records err, at now, as the backend's last failure.
func (h *Health) SetError(now int64, err error) {
	h.lastErr.Store(&lastFailure{msg: err.Error(), at: now})
}

// CheckPassed counts an active check that passed in d and adds d to the
// last latency and the EWMA (weight 1/4 for the new sample). Only the
// backend's prober calls it.
func (h *Health) CheckPassed(d time.Duration) {
	h.probesOK.Add(1)
	h.lastLatency.Store(int64(d))
	avg := h.avgLatency.Load()
	if avg == 0 {
		avg = int64(d)
	} else {
		avg += (int64(d) - avg) / 4
	}
	h.avgLatency.Store(max(avg, 1))
}

// CheckFailed counts an active check that failed at now with err, and
// records the failure (MarkFailed, probe saying whether the check was the
// backend's one probe); it reports whether the backend was marked down.
func (h *Health) CheckFailed(cfg config.ProbeConfig, now int64, err error, probe bool) bool {
	h.probesFailed.Add(1)
	h.SetError(now, err)
	return h.MarkFailed(cfg, now, probe)
}

// Status returns the health of the backend addr of group, as the admin API
// and the metrics show it.
func (h *Health) Status(group, addr string) admin.BackendStatus {
	st := admin.BackendStatus{
		Group:           group,
		Addr:            addr,
		Failures:        int(h.Failures.Load()),
		Sessions:        h.Active.Load(),
		ConnectFailures: h.ConnectFailures.Load(),
		ProbesOK:        h.probesOK.Load(),
		ProbesFailed:    h.probesFailed.Load(),
		Latency:         time.Duration(h.lastLatency.Load()),
		LatencyEWMA:     time.Duration(h.avgLatency.Load()),
	}
	switch s := h.state.Load(); {
	case s == stateUp:
		st.Up = true
	case s < 0:
		st.Probing = true
	default:
		st.DownUntil = time.Unix(0, s)
	}
	if e := h.lastErr.Load(); e != nil {
		st.LastError, st.LastErrorAt = e.msg, time.Unix(0, e.at)
	}
	return st
}
