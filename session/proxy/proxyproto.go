package proxy

import (
	"fmt"
	"net/netip"

	"github.com/tidegate/tidegate/protocol/proxyproto"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// The PROXY protocol, both ways.
//
// In: a listener with proxy_protocol.accept set takes connections only from
// the addresses in proxy_protocol.trusted (anyone else is refused at
// accept, counted as proxy_protocol_untrusted), and each must start with a
// header within limits.handshake_timeout (else bad_proxy_protocol). The
// header's source address becomes the session's client address: per-IP
// limits (admitted only once the header is read), logs, BungeeCord
// forwarding, the header sent on to backends and a live upgrade's hand-over
// all use it. The header itself goes no further; what follows it in the
// same read is the session's first input.
//
// Out: a group with send_proxy_protocol set writes a header first on each
// backend connection, carrying the client's address and the address it
// connected to (the proxy's, or the one the incoming header named), and a
// LOCAL header (v2) or "PROXY UNKNOWN" (v1) on active health checks.

// proxied is what a session's PROXY header said of its client.
type proxied struct {
	src netip.AddrPort // the client
	dst netip.AddrPort // where it connected; may be invalid (after a hand-over)
}

// trustedProxySource checks, at accept, that the peer of c may send a PROXY
// header; a refusal is counted and logged, and the caller aborts c.
func (p *Proxy) trustedProxySource(c *reactor.Conn, ls *loopState, l *config.ListenerConfig, a *config.ProxyAccept) bool {
	if a.Trusts(config.AddrPortOf(c.RemoteAddr()).Addr()) {
		return true
	}
	ls.refused(reasons.ProxyProtocolUntrusted, config.AddrPortOf(c.RemoteAddr()), "", "", "")
	p.log.Warn().Str("remote", c.RemoteAddr().String()).Str("reason", reasons.ProxyProtocolUntrusted.String()).
		Str("listen", l.Listen).Msg("session refused: this listener takes PROXY protocol connections only from its trusted sources")
	return false
}

// readProxyHeader reads the PROXY header the session starts with. Once it
// has arrived the session is admitted under its client's address and goes
// on with what followed the header.
func (s *session) readProxyHeader() {
	c := s.client
	buf, _ := c.Peek(-1)
	a := s.gen.proxyIn[s.listenerCfg()]
	h, n, err := proxyproto.Parse(buf, proxyproto.Options{Versions: a.Versions})
	if err != nil {
		s.refuseProxyHeader(err, len(buf))
		return
	}
	if n == 0 {
		return // bounded: Parse waits for at most one header's length
	}
	if h.Source.IsValid() {
		s.pp = &proxied{src: config.UnmapAddrPort(h.Source), dst: config.UnmapAddrPort(h.Destination)}
		s.ip = s.pp.src.Addr().String()
	}
	c.Discard(n)
	s.state = stHandshake
	if ev := s.p.log.Debug(); ev.Enabled() {
		ev.Str("remote", s.remoteAddr()).Stringer("peer", c.RemoteAddr()).Stringer("version", h.Version).
			Bool("local", !h.Source.IsValid()).Msg("PROXY header read")
	}
	if r, ok := s.p.admit(s.gen, s.ip); !ok {
		s.reject(r, nil)
		return
	}
	s.unadmitted = false
	s.begin()
	if !s.raw && s.state == stHandshake && c.InboundBuffered() > 0 {
		s.readHandshake()
	}
}

// refuseProxyHeader ends a session whose PROXY header is bad or missing:
// counted as bad_proxy_protocol, logged, and closed.
func (s *session) refuseProxyHeader(err error, received int) {
	c := s.client
	s.refused(reasons.BadProxyProtocol)
	s.p.log.Warn().Str("remote", c.RemoteAddr().String()).Str("reason", reasons.BadProxyProtocol.String()).
		Str("listen", s.listenerCfg().Listen).Str("detail", proxyproto.ErrorReason(err)).Int("received", received).Err(err).
		Msg("session rejected")
	s.state = stDone
	c.Discard(-1)
	c.Close()
}

// proxyHeaderTimeout refuses a session whose PROXY header did not arrive
// within the handshake timeout.
func (s *session) proxyHeaderTimeout() {
	n := s.client.InboundBuffered()
	s.refuseProxyHeader(fmt.Errorf("no whole PROXY header within handshake_timeout %v (%d bytes arrived)", s.gen.cfg.Limits.HandshakeTimeout, n), n)
}

// proxyHeaderEOF handles a client that shut down its side before its
// PROXY header was whole: a part of one is a bad header; nothing at all
// is a plain close (as a load balancer's TCP health check does).
func (s *session) proxyHeaderEOF() {
	if n := s.client.InboundBuffered(); n > 0 {
		s.refuseProxyHeader(fmt.Errorf("connection closed after %d bytes, inside the PROXY header", n), n)
		return
	}
	s.state = stDone
	s.client.Close()
}

// remoteAddr is the client's address for logs: the one its PROXY header
// gave, or the socket's peer.
func (s *session) remoteAddr() string {
	if s.pp != nil {
		return s.pp.src.String()
	}
	if a := s.client.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}

// appendProxyHeader appends the header for the session's backend in
// version v: the client's address, and the address it connected to.
func (s *session) appendProxyHeader(b []byte, v proxyproto.Versions) []byte {
	var src, dst netip.AddrPort
	if s.pp != nil {
		src, dst = s.pp.src, s.pp.dst
	} else {
		src = config.AddrPortOf(s.client.RemoteAddr())
	}
	if !dst.IsValid() {
		dst = config.AddrPortOf(s.client.LocalAddr())
	}
	return proxyproto.Append(b, v, src, dst)
}
