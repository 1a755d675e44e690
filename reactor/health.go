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
	Listeners []ListenerHealth `json:"listeners"`
}

// ListenerHealth is the state of one listening socket.
type ListenerHealth struct {
	// Addr is the bound address.
	Addr string `json:"addr"`
	// Alive is true while its accept goroutine runs.
	Alive bool `json:"alive"`
	// State is accepting, paused_max_conns, paused_fd_budget, backoff or
	// stopped. A paused listener is alive: connections wait in the backlog.
	State string `json:"state"`
	// Err says why it stopped accepting, when it failed.
	Err string `json:"error,omitempty"`
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

// ListenerPauses returns the ListenerHealth.State values of a listener that
// is alive but leaves new connections in the kernel's backlog: at MaxConns,
// at the descriptor budget, and backing off after an accept error.
func ListenerPauses() []string {
	return []string{acceptor.AtMaxConns.String(), acceptor.AtFDBudget.String(), acceptor.Backoff.String()}
}

// AcceptedOpen returns the accepted connections open now (OnOpen ran,
// OnClose not yet), as MaxConns counts them.
func (s *Server) AcceptedOpen() int64 { return s.acceptedOpen.Load() }

// Health returns the server's health now.
func (s *Server) Health() Health {
	lns := s.accept.List()
	h := Health{Running: !s.stopping.Load(), Draining: s.draining.Load(), Listeners: make([]ListenerHealth, len(lns))}
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
	for i, l := range lns {
		h.Listeners[i] = ListenerHealth{Addr: l.Net().Addr().String(), Alive: l.Alive(), State: l.State().String(), Err: l.Err()}
	}
	return h
}
