package proxy

import "github.com/tidegate/tidegate/session/proxy/login"

// backendHandshake returns the handshake frame to send the backend in
// place of the client's, built in ls's scratch buffers (valid until the
// loop's next call), and whether there is one: with the route's
// rewrite_host or BungeeCord forwarding (see login.AppendHandshake).
// Otherwise the client's handshake goes unchanged.
func (s *session) backendHandshake(ls *loopState) ([]byte, bool) {
	rw := login.Rewrite{Bungee: s.group.bungee}
	if rt := s.pre.route; rt != nil {
		rw.Host, rw.Port = rt.rewriteHost, rt.rewritePort
	}
	if s.raw || !rw.Bungee && rw.Host == nil {
		return nil, false
	}
	if t := s.pre.term; t != nil { // the authenticated identity (login: online)
		u, props := t.Identity()
		rw.UUID, rw.Properties = &u, props
	}
	ls.hsBuf, ls.addrBuf = login.AppendHandshake(ls.hsBuf[:0], ls.addrBuf[:0], s.pre.handshake, rw, s.ip, s.username)
	return ls.hsBuf, true
}
