package proxy

// A group's backend is chosen by package balance, which reads the
// backends through these methods.

// Up reports whether b may get sessions.
func (b *backend) Up() bool { return b.state.Load() == stateUp }

// Weight is b's configured weight.
func (b *backend) Weight() int { return b.weight }

// Load is the number of b's sessions: relayed and connecting, so that
// least-connections sees a burst of sessions it sent there.
func (b *backend) Load() int64 { return b.active.Load() + b.connecting.Load() }

// Latency is the EWMA of b's active checks' latency, ns; 0 before the first.
func (b *backend) Latency() int64 { return b.avgLatency.Load() }

// endDial stops counting the session's connect in flight toward its
// backend, once, however the connect ended.
func (s *session) endDial() {
	if s.dialing {
		s.dialing = false
		s.target.connecting.Add(-1)
	}
}
