package proxy

import (
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// backendHandshake returns the handshake frame to send the backend in
// place of the client's, built in ls's scratch buffers (valid until the
// loop's next call), and whether there is one: with the route's
// rewrite_host the host (and port, if it names one) is replaced and the
// Forge marker after it kept; with BungeeCord forwarding the address
// becomes host\0clientIP\0uuid (no marker). Otherwise the client's
// handshake goes unchanged.
func (s *session) backendHandshake(ls *loopState) ([]byte, bool) {
	bungee := s.gen.cfg.Forwarding == config.ForwardBungeeCord
	rt := s.pre.route
	rewrite := rt != nil && rt.rewriteHost != nil
	if s.raw || !bungee && !rewrite {
		return nil, false
	}
	hs := s.pre.handshake
	host, marker := mc.SplitAddress(hs.Address)
	if rewrite {
		host = rt.rewriteHost
		if rt.rewritePort != 0 {
			hs.Port = rt.rewritePort
		}
	}
	if bungee {
		ls.addrBuf = mc.AppendBungeeAddress(ls.addrBuf[:0], host, s.ip, mc.OfflineUUID([]byte(s.username)), nil)
	} else {
		ls.addrBuf = append(append(ls.addrBuf[:0], host...), marker...)
	}
	hs.Address = ls.addrBuf
	ls.hsBuf = mc.AppendHandshake(ls.hsBuf[:0], hs)
	return ls.hsBuf, true
}
