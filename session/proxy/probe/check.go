// Package probe is the active checking of backends: one check (Check), a
// connect and, for Minecraft groups, a status exchange, and the goroutines
// that repeat it for every backend every health.interval (Runner), and a
// backend's Health, the circuit breaker its connects and checks (Once)
// feed. Which backends there are, and when a session's connect counts, is
// the proxy's.
package probe

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/tidegate/tidegate/protocol/proxyproto"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/status"
)

// Check connects to addr within timeout, writes the PROXY header of
// version pp first if pp is set, and, for config.ProbeStatus, does a
// Minecraft status exchange. It returns how long that took (at least 1ns).
// When ctx ends, a status exchange in flight is cut short.
func Check(ctx context.Context, addr string, kind config.ProbeKind, timeout time.Duration, pp proxyproto.Versions) (time.Duration, error) {
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		if strings.Contains(err.Error(), addr) { // "dial tcp ADDR: ..." names it
			return 0, fmt.Errorf("%s check: %w", kind, err)
		}
		return 0, fmt.Errorf("%s check of %s: %w", kind, addr, err)
	}
	defer conn.Close()
	if hdr := proxyHeader(pp, conn); hdr != nil {
		_ = conn.SetWriteDeadline(start.Add(timeout))
		if _, err := conn.Write(hdr); err != nil {
			return 0, fmt.Errorf("%s check of %s: sending the PROXY header: %w", kind, addr, err)
		}
	}
	if kind == config.ProbeStatus {
		stop := context.AfterFunc(ctx, func() { _ = conn.Close() }) // Proxy.Stop need not wait for the timeout
		defer stop()
		_ = conn.SetDeadline(start.Add(timeout))
		if _, err := status.Exchange(conn, addr); err != nil {
			return 0, fmt.Errorf("%s check of %s: %w", kind, addr, err)
		}
	}
	return max(time.Since(start), 1), nil
}

// proxyHeader is what a check of a group that sends PROXY headers writes
// first on its connection conn: v2's LOCAL command, or (v1 has none) a
// line with the check's own endpoints; nil when the group sends none.
func proxyHeader(v proxyproto.Versions, conn net.Conn) []byte {
	switch v {
	case proxyproto.V1:
		return proxyproto.AppendV1(nil, tcpAddrPort(conn.LocalAddr()), tcpAddrPort(conn.RemoteAddr()))
	case proxyproto.V2:
		return proxyproto.AppendV2Local(nil)
	}
	return nil
}

// tcpAddrPort is a TCP address as a netip.AddrPort, IPv4-mapped addresses
// unmapped.
func tcpAddrPort(a net.Addr) netip.AddrPort {
	t, _ := a.(*net.TCPAddr) // nil, whose AddrPort is the zero one, for another kind
	ap := t.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
