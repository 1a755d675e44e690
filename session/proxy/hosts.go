package proxy

import "github.com/tidegate/tidegate/session/proxy/login"

// backendHandshake returns what replaces the start of the client's input buf
// toward the backend (in ls's scratch buffers, valid until the loop's next
// call), the bytes it replaces, and whether there is any: the handshake for
// rewrite_host or bungeecord forwarding, a terminated login's Login Start.
func (s *session) backendHandshake(ls *loopState, buf []byte) ([]byte, int, bool) {
	rw := login.Rewrite{Bungee: s.group.bungee}
	if rt := s.pre.route; rt != nil {
		rw.Host, rw.Port = rt.rewriteHost, rt.rewritePort
	}
	t := s.pre.term
	if s.raw || !rw.Bungee && rw.Host == nil && t == nil {
		return nil, 0, false
	}
	if t != nil { // the authenticated identity (login: online)
		u, props := t.Identity()
		rw.UUID, rw.Properties = &u, props
	}
	ls.hsBuf, ls.addrBuf = login.AppendHandshake(ls.hsBuf[:0], ls.addrBuf[:0], s.pre.handshake, rw, s.ip, s.username)
	var n int
	ls.hsBuf, n = t.AppendLoginStart(ls.hsBuf, buf[s.pre.hsLen:])
	return ls.hsBuf, s.pre.hsLen + n, true
}
