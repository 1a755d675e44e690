package reactor

import "github.com/tidegate/tidegate/reactor/acceptor"

// Health is a snapshot of whether a server is serving, for liveness and
// readiness endpoints. It is read from the server's real state: the event
// loops and each listener's accept goroutine.
type Health struct {
	// Running is true while the event loops run and Stop has not been called.
	Running bool `json:"running"`
	// Err says why the event loops ended without Stop.
	Err string `json:"error,omitempty"`
	// Draining is true once the server stopped accepting for a graceful
	// shutdown: its listeners are closed on purpose.
	Draining bool `json:"draining,omitempty"`
	// Listeners are the server's listening sockets, in Config.Addrs order.
	Listeners []acceptor.Health `json:"listeners"`
}

// OK reports whether the loops run and every listener is alive (or, while
// draining, closed on purpose).
func (h Health) OK() bool {
	if !h.Running {
		return false
	}
	if h.Draining {
		return true
	}
	for _, l := range h.Listeners {
		if !l.Alive {
			return false
		}
	}
	return true
}

// AcceptedOpen returns the accepted connections open now (OnOpen ran,
// OnClose not yet), as MaxConns counts them.
func (s *Server) AcceptedOpen() int64 { return s.acceptedOpen.Load() }

// Health returns the server's health now.
func (s *Server) Health() Health {
	h := Health{Running: !s.stopping.Load(), Draining: s.draining.Load(), Listeners: s.accept.Health()}
	select {
	case <-s.done:
		h.Running = false
		if err := s.Err(); err != nil {
			h.Err = err.Error()
		}
	default:
	}
	select {
	case <-s.booted:
	default:
		h.Running = false // not started
	}
	return h
}
