package proxy

import (
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/login"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// How a session ends before it relays, or by a timer: refusals and
// timeouts.

// onTimer handles the handshake timeout before relay and the idle timeout during it.
func (s *session) onTimer() {
	c := s.client
	l := c.Loop()
	switch s.state {
	case stRelay:
		if s.clientEOF || s.backendEOF {
			s.p.loopOf(c).counters.ended[reasons.FinTimeout].Add(1)
			s.p.log.Info().Str("remote", s.remoteAddr()).Str("user", s.username).Bool("client_done", s.clientEOF).
				Dur("fin_timeout", s.gen.cfg.Limits.FinTimeout).Msg("closing half-closed session: the other side did not finish")
			s.closeBoth()
			return
		}
		idle := s.gen.cfg.Limits.IdleTimeout
		if due := s.lastActive + int64(idle); due > l.Now() {
			l.ScheduleAt(&s.timer, due)
			return
		}
		s.p.loopOf(c).counters.ended[reasons.IdleTimeout].Add(1)
		s.p.log.Info().Str("remote", s.remoteAddr()).Str("user", s.username).Dur("idle", idle).Msg("closing idle session")
		s.closeBoth()
	case stDone, stAdopting, stHandedOver:
	case stLegacyPing:
		if s.pre.legacy == 0 && l.Now() < s.handshakeDeadline() {
			s.legacyWaitOver()
			return
		}
		s.reject(reasons.HandshakeTimeout, nil)
	case stProxyHeader:
		s.proxyHeaderTimeout()
	case stClusterWait:
		s.clusterWaitOver()
	case stEncryption:
		s.reject(reasons.EncryptionTimeout, nil)
	case stAuthWait:
		s.reject(reasons.AuthUnavailable, login.ErrNoVerdict)
	default:
		s.reject(reasons.HandshakeTimeout, nil)
	}
}

// reject ends a session before relay: it counts and logs the reason, sends a
// Minecraft disconnect message where the client is in the login state, and
// closes the client cleanly.
func (s *session) reject(r reasons.Reason, err error) {
	c := s.client
	s.refused(r)
	ev := s.p.refusalEvent(r).Str("remote", s.remoteAddr()).Str("reason", r.String()).Str("host", s.host)
	if s.group != nil {
		ev = ev.Str("group", s.group.name)
	}
	if s.username != "" {
		ev = ev.Str("user", s.username)
	}
	if err != nil {
		ev = ev.Err(err).Str("detail", mc.ErrorReason(err))
	}
	ev.Msg("session rejected")
	if s.loginDisconnectable() {
		switch msg := reasons.DisconnectText(r); {
		case (r == reasons.BackendUnavailable || r == reasons.NoHealthyBackend) && s.group != nil:
			s.sendClient(s.group.offlineDisconnect)
		case msg != "":
			s.sendClient(mc.AppendLoginDisconnect(nil, []byte(`{"text":"`+msg+`"}`)))
		}
	}
	s.dropProbe()
	c.Discard(-1)
	s.closeBoth()
}

// leaveBackend stops counting the session on its backend, once, whichever
// side ends first and however the session left the relay state.
func (s *session) leaveBackend() {
	if s.onBackend {
		s.onBackend = false
		s.target.Active.Add(-1)
	}
}

// dropProbe gives back the session's health probe if its connect is
// abandoned undecided.
func (s *session) dropProbe() {
	if s.probe {
		s.probe = false
		s.target.DropProbe(s.gen.router.now())
	}
}

// OnDrainDeadline says goodbye to a client still connected when a drain
// ends: a player still logging in gets the shutdown message as a
// disconnect (in play the proxy does not speak the game's protocol and the
// session is closed, its queued output delivered).
func (h *clientHandler) OnDrainDeadline(c *reactor.Conn) {
	s, ok := c.Value.(*session)
	if !ok {
		return
	}
	p := s.p
	if s.state == stRelay {
		p.loopOf(c).counters.ended[reasons.Shutdown].Add(1)
	} else {
		s.refused(reasons.Shutdown)
	}
	if s.loginDisconnectable() {
		s.sendClient(s.gen.shutdownDisconnect)
	}
	s.state = stDone
	if s.backend != nil {
		s.backend.Close()
	}
}

// halfClosed runs when one direction of a relayed session has ended: once
// both have, the session closes (each side after its output drains);
// until then the other direction has FinTimeout to finish.
func (s *session) halfClosed() {
	if s.clientEOF && s.backendEOF {
		s.closeBoth()
		return
	}
	s.client.Loop().Schedule(&s.timer, s.gen.cfg.Limits.FinTimeout)
}

// closeBoth ends the session: each side closes after its output drains.
func (s *session) closeBoth() {
	s.state = stDone
	s.client.Close()
	if s.backend != nil {
		s.backend.Close()
	}
}
