package proxy

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/login"
	"github.com/tidegate/tidegate/session/proxy/reasons"
	"github.com/tidegate/tidegate/session/proxy/reframe"
)

// backendLogin reads the backend's side of a login the proxy completes
// (session/proxy/login): once the backend's Login Success is in, the
// client's login is finished and the session relays like any other.
func (s *session) backendLogin(bc *reactor.Conn) {
	ls := s.p.loopOf(bc)
	buf, _ := bc.Peek(-1)
	n, toBackend, toClient, err := s.pre.term.Feed(buf, &ls.compressor)
	if len(toBackend) > 0 {
		_ = bc.Write(toBackend)
	}
	if err != nil {
		bc.Discard(-1)
		s.backendLoginFailed(err)
		return
	}
	bc.Discard(n)
	switch t := s.pre.term; {
	case t.LoggedIn():
		s.loginDone(bc, toClient)
	case toClient != nil: // login plugin requests, relayed (session/proxy/login/plugin.go)
		s.sendClient(toClient)
		fallthrough
	default:
		if t.SuccessHeld() { // until the client's answers are in, nothing more is read
			bc.PauseRead()
		}
	}
}

// loginDone finishes the client's login with toClient and relays: what
// followed the backend's Login Success first.
func (s *session) loginDone(bc *reactor.Conn, toClient []byte) {
	ls := s.p.loopOf(bc)
	s.sendClient(toClient)
	if ls.reframes.Start(s, s.pre.term) {
		s.via |= viaReframe
	}
	s.startRelay()
	bc.ResumeRead() // if a held Login Success paused it
	s.relay(false)
}

// waitingInput handles what a client sends while its login waits: the
// network's verdict (not read until then), or its backend's login, when
// only answers to the login plugin requests relayed to it may come.
func (s *session) waitingInput(c *reactor.Conn) {
	if s.state != stBackendLogin {
		c.PauseRead()
		return
	}
	ls := s.p.loopOf(c)
	in, _ := c.Peek(-1)
	s.ciphers().Open(in) // in place: all of it is consumed below
	toBackend, toClient, err := s.pre.term.FeedClient(in, &ls.compressor)
	c.Discard(-1)
	if len(toBackend) > 0 {
		_ = s.backend.Write(toBackend)
	}
	var ce *login.ClientError
	switch {
	case errors.As(err, &ce):
		s.backend.Close()
		s.reject(reasons.BadLoginPacket, err)
	case err != nil:
		s.backendLoginFailed(err)
	case toClient != nil:
		s.loginDone(s.backend, toClient)
	}
}

// backendLoginFailed ends a session whose backend login failed with err:
// the player reads the backend's reason or what went wrong.
func (s *session) backendLoginFailed(err error) {
	if msg := login.DisconnectFrame(err); msg != nil {
		s.sendClient(msg) // reject has no text of its own for this reason
	}
	s.backend.Close()
	s.reject(reasons.BackendLogin, fmt.Errorf("backend %s: %w", s.target.addr, err))
}

// startRelay relays both ways between the client and its connected backend.
func (s *session) startRelay() {
	c, bc := s.client, s.backend
	s.state = stRelay
	if s.pre != nil { // nil after a move: the player's identity and thresholds are the first login's
		s.p.loopOf(c).kept.Keep(s, s.pre.term) // a terminated login's thresholds and profile, for a live upgrade
	}
	s.keepPlayer() // moving.go, and the inspection with it
	s.dropPre()    // what the login needed is sent; relaying needs none of it
	c.SetSink(bc)
	bc.SetSink(c)
	c.ResumeRead() // if it was held while connecting
	c.Backpressure()
	s.lastActive = c.Loop().Now()
	if idle := s.gen.cfg.Limits.IdleTimeout; s.clientEOF {
		s.halfClosed()
	} else if idle > 0 {
		c.Loop().Schedule(&s.timer, idle)
	} else {
		c.Loop().Stop(&s.timer)
	}
	s.p.log.Debug().Str("remote", s.remoteAddr()).Str("host", s.host).Str("user", s.username).
		Str("backend", s.target.addr).Msg("session routed")
}

// via is how a session's relay goes besides copying the bytes.
type via uint8

const (
	viaReframe via = 1 << iota // its client and backend compress at different thresholds: its loop's reframes has it
	viaInspect                 // its backend's packets are looked at (moving.go): its loop's inspect has it
)

// relayReframed is relay for a session whose client is told another
// compression threshold than its backend's (session/proxy/reframe).
func (s *session) relayReframed(from, to *reactor.Conn, fs *mc.FrameCounter, bytes, frames *atomic.Int64) {
	ls, final := s.p.loopOf(from), from.Closing() || (from == s.client && s.clientEOF) || (from == s.backend && s.backendEOF)
	n, f, err := ls.reframes.Relay(s, from, to, from == s.client, s.ciphers(), fs, final)
	bytes.Add(int64(n))
	frames.Add(int64(f))
	s.lastActive = from.Loop().Now()
	if r := reframe.Reason(err); err != nil {
		ls.counters.ended[r].Add(1)
		s.p.log.Warn().Str("remote", s.remoteAddr()).Str("user", s.username).Bool("from_client", from == s.client).Str("reason", r.String()).Err(err).Msg("session closed: a frame could not be re-framed")
		s.closeBoth()
	}
}
