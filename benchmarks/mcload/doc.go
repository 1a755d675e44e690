// Package mcload holds two Minecraft load probes that run against any proxy
// in front of the fake backend: idle (many logged-in sessions that stay
// quiet, to measure the proxy's memory and descriptors per session and that
// the sessions survive) and handshake (a storm of logins, to measure the
// accepted rate, the refusals by reason and the time to reach play).
//
// Clients log in as package session's do (offline, protocol 5). Idle
// sessions are held by several worker processes (`tidegate-bench bench
// idle-worker`), since one process may hold only as many sockets as its
// descriptor limit, and are spread over several loopback source addresses,
// since one (source, destination) pair has only ~28k ephemeral ports.
package mcload

import (
	"fmt"
	"net"
	"strings"
)

// ParseSources parses a comma-separated list of source IP addresses; an
// empty list means the system's choice.
func ParseSources(list string) ([]net.IP, error) {
	var out []net.IP
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		ip := net.ParseIP(f)
		if ip == nil {
			return nil, fmt.Errorf("source address %q is not an IP address", f)
		}
		out = append(out, ip)
	}
	return out, nil
}

// dialer returns a dialer bound to sources[i % len(sources)], or an unbound
// one for no sources.
func dialer(sources []net.IP, i int) *net.Dialer {
	d := &net.Dialer{}
	if len(sources) > 0 {
		d.LocalAddr = &net.TCPAddr{IP: sources[i%len(sources)]}
		d.Control = noPortAtBind
	}
	return d
}

// Reason labels a failed connection: the login error's reason, with a
// disconnect's text, or "connect: ..." for a failed dial.
func connectReason(err error) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "connection refused"):
		return "connect: refused"
	case strings.Contains(s, "timeout"), strings.Contains(s, "i/o timeout"):
		return "connect: timeout"
	case strings.Contains(s, "too many open files"):
		return "connect: too many open files"
	case strings.Contains(s, "cannot assign requested address"), strings.Contains(s, "bind: address already in use"):
		return "connect: no free local port"
	}
	return "connect: " + s
}
