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
	"strings"
)

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
