package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Virtual hosts: a route's hosts are exact names or wildcards. A wildcard
// is "*." and a domain: *.example.com matches a.example.com and
// a.b.example.com (any depth) but not example.com, which needs its own
// entry. The proxy's router tries the exact name, then the wildcards from the
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

// Rewrite splits the route's rewrite_host, which must have passed the
// checks, into the host and the port, 0 when it names none; "" and 0 when
// it is not set.
func (r RouteConfig) Rewrite() (host string, port uint16) {
	v := r.RewriteHost
	host, portText, err := net.SplitHostPort(v)
	if err != nil {
		return v, 0
	}
	n, _ := strconv.ParseUint(portText, 10, 16)
	return host, uint16(n)
}

// NormalizeHost lower-cases a configured host and drops one trailing dot,
// as routing does with the handshake address.
func NormalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}
