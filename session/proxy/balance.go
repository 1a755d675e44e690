package proxy

// A group's backend is chosen by package balance, which reads a backend
// as a balance.Backend: Up, Load and Latency are its health's.

// Weight is b's configured weight.
func (b *backend) Weight() int { return b.weight }

// endDial stops counting the session's connect in flight toward its
// backend, once, however the connect ended.
func (s *session) endDial() {
	if s.dialing {
		s.dialing = false
		s.target.Connecting.Add(-1)
	}
}
