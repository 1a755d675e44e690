package proxy

import (
	"time"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/mcauth"
	"github.com/tidegate/tidegate/session/proxy/login"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// requestEncryption starts an online-mode login (login: online): it keeps
// the handshake and Login Start (ls), buf[:end], and asks for encryption.
func (s *session) requestEncryption(buf []byte, end int, ls []byte) {
	c := s.client
	var req []byte
	s.pre.online, req = login.NewOnline(s.p.auth, s.protocol, ls)
	s.pre.early = append(s.pre.early[:0], buf[:end]...)
	c.Discard(end)
	_ = c.Write(req)
	s.state, s.pre.online.Asked = stEncryption, c.Loop().Now()
	c.Loop().Schedule(&s.timer, s.gen.cfg.Auth.EncryptionTimeout)
	s.readEncryptionResponse()
}

// readEncryptionResponse gives the Encryption Response to the pool; the
// session waits for the verdict (the timer is a backstop), still reading,
// so that a client that leaves meanwhile ends it at once rather than get
// a backend login once the verdict is in; what it sends is held.
func (s *session) readEncryptionResponse() {
	c, l := s.client, s.client.Loop()
	buf, _ := c.Peek(-1)
	n, hl, ok := s.preRouteFrame(buf, 0, login.MaxEncryptionResponse)
	if !ok {
		return
	}
	s.state = stAuthWait
	l.Schedule(&s.timer, 2*s.gen.cfg.Auth.Timeout+time.Second) // a backstop: the pool answers within Timeout
	err := s.pre.online.Authenticate(s.p.auth, s.pre.term, buf[hl:n], s.protocol, s.ip, func(r mcauth.Result) {
		_ = l.Execute(func() {
			if s.state == stAuthWait { // one verdict per session: a later state ended the wait
				s.authVerdict(r)
			}
		})
	})
	c.Discard(n)
	if err != nil {
		s.authFailed(err)
	}
}

// authVerdict goes on with a login the pool decided, on the loop.
func (s *session) authVerdict(r mcauth.Result) {
	if cr := login.CiphersOf(r); cr != nil { // first: the client encrypts from its response on
		s.p.loopOf(s.client).ciphers.Set(s, cr)
		s.encrypted = true
	}
	if r.Failure != nil {
		s.authFailed(r.Failure)
		return
	}
	s.pre.term.Authenticated(r.Profile)
	s.username = r.Profile.Name
	s.client.ResumeRead()
	s.client.Loop().Schedule(&s.timer, s.gen.cfg.Limits.HandshakeTimeout) // for the backend's side
	if s.p.cluster != nil {
		s.clusterLogin(s.pre.online.LoginStart)
		return
	}
	s.connect()
}

// authFailed ends a login that was not authenticated, with vanilla's text.
func (s *session) authFailed(err error) {
	s.sendClient(login.AuthDisconnect(err))
	s.reject(login.FailureReason(err), err)
}

// clientLeft runs when the client's connection ends (or its read side,
// before routing) with cause err: a client that gives up after the
// Encryption Request, before its verdict, is counted and logged as
// encryption_abandoned; any other end is a debug line.
func (s *session) clientLeft(err error) {
	if s.state != stEncryption && s.state != stAuthWait {
		s.p.log.Debug().Str("remote", s.remoteAddr()).Str("user", s.username).AnErr("cause", err).Msg("client closed")
		return
	}
	r := reasons.EncryptionAbandoned
	s.refused(r)
	ev := s.p.refusalEvent(r).Str("remote", s.remoteAddr()).Str("reason", r.String()).Str("host", s.host).Str("user", s.username).
		Str("state", s.state.String()).Dur("after", time.Duration(s.client.Loop().Now()-s.pre.online.Asked))
	if s.group != nil {
		ev = ev.Str("group", s.group.name)
	}
	ev.AnErr("cause", err).Msg("session rejected: the client left after the Encryption Request")
}

// sendClient writes b to the client, encrypted once it is (b unchanged).
func (s *session) sendClient(b []byte) { _ = s.client.Write(s.ciphers().Seal(b)) }

// connectInput returns what goes to the backend at connect after the
// proxy's own header: the client's input, or what was kept of it when the
// client half-closed or its input is encrypted.
func (s *session) connectInput(c *reactor.Conn) []byte {
	if s.encrypted {
		s.holdInput(c)
	}
	if s.clientEOF || s.encrypted {
		return s.pre.early
	}
	buf, _ := c.Peek(-1)
	return buf
}

// holdInput moves the client's unread input to pre.early, decrypted, for
// the backend once it connects.
func (s *session) holdInput(c *reactor.Conn) {
	in, _ := c.Peek(-1)
	n := len(s.pre.early)
	s.pre.early = append(s.pre.early, in...)
	s.ciphers().Open(s.pre.early[n:])
	c.Discard(-1)
}

// ciphers returns the session's client ciphers, nil when not encrypted.
func (s *session) ciphers() *login.Ciphers {
	if !s.encrypted {
		return nil
	}
	return s.p.loopOf(s.client).ciphers.Get(s)
}
