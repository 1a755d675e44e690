package proxy

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/tidegate/tidegate/protocol/mc"
)

// Virtual hosts: a route's hosts are exact names or wildcards. A wildcard
// is "*." and a domain: *.example.com matches a.example.com and
// a.b.example.com (any depth) but not example.com, which needs its own
// entry. router.route tries the exact name, then the wildcards from the
// longest suffix, then default_group.

// routeHostProblem returns what is wrong with a route's host h (n is h
// normalized), or "".
func routeHostProblem(h, n string) string {
	name := n
	if strings.HasPrefix(n, "*.") {
		name = n[2:]
	}
	switch {
	case n == "":
		return "empty host"
	case n == "*" || n == "*.":
		return fmt.Sprintf("%q would match every host: set default_group to the group for hosts without a route", h)
	case name == "":
		return fmt.Sprintf("%q: a wildcard needs a domain, as *.example.com", h)
	case strings.Contains(name, "*"):
		return fmt.Sprintf("%q: * may only stand as the first label, as *.example.com", h)
	case strings.ContainsAny(name, " \x00/:"):
		return fmt.Sprintf("%q is not a host name", h)
	}
	return ""
}

// rewriteHostProblem returns what is wrong with a route's rewrite_host v,
// or "" (an empty v rewrites nothing).
func rewriteHostProblem(v string) string {
	if v == "" {
		return ""
	}
	const want = "want a host or host:port, as play.internal or play.internal:25565"
	host, port, err := net.SplitHostPort(v)
	switch {
	case err == nil:
		n, perr := strconv.Atoi(port)
		if perr != nil || strings.TrimLeft(port, "0123456789") != "" {
			return fmt.Sprintf("%q: port %q is not a number", v, port)
		}
		if n < 1 || n > 65535 {
			return fmt.Sprintf("%q: port %d is out of range: want 1-65535", v, n)
		}
	case strings.Count(v, ":") > 1:
		if _, perr := netip.ParseAddr(v); perr != nil {
			return fmt.Sprintf("%q: %s", v, want)
		}
		host = v // an IPv6 address without a port
	case strings.Contains(v, ":"):
		return fmt.Sprintf("%q: %s", v, want)
	default:
		host = v
	}
	if host == "" || !validHost(host) {
		return fmt.Sprintf("%q: %q is neither an IP address nor a host name", v, host)
	}
	return ""
}

// splitRewriteHost splits a valid rewrite_host into the host and the port,
// 0 when it names none.
func splitRewriteHost(v string) (string, uint16) {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return v, 0
	}
	n, _ := strconv.ParseUint(port, 10, 16)
	return host, uint16(n)
}

// backendHandshake returns the handshake frame to send the backend in
// place of the client's, built in ls's scratch buffers (valid until the
// loop's next call), and whether there is one: with the route's
// rewrite_host the host (and port, if it names one) is replaced and the
// Forge marker after it kept; with BungeeCord forwarding the address
// becomes host\0clientIP\0uuid (no marker). Otherwise the client's
// handshake goes unchanged.
func (s *session) backendHandshake(ls *loopState) ([]byte, bool) {
	bungee := s.gen.cfg.Forwarding == ForwardBungeeCord
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
