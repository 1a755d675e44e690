package admin

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/session/proxy/config"
)

// TestHostMatches: the host filter, exact or *.suffix, on normalized hosts.
func TestHostMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"play.example.com", "play.example.com", true},
		{"play.example.com", "play.example.org", false},
		{"*.example.com", "play.example.com", true},
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "badexample.com", false},
		{"*.example.com", ".example.com", false},
		{"*.com", "example.com", true},
		{"", "", true},
	} {
		if got := hostMatches(tc.pattern, tc.host); got != tc.want {
			t.Errorf("hostMatches(%q, %q) = %v, want %v", tc.pattern, tc.host, got, tc.want)
		}
	}
}

// TestAdminAllowed: without allow_remote only loopback to loopback is
// answered; an address that cannot be read counts as remote.
func TestAdminAllowed(t *testing.T) {
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	for _, tc := range []struct {
		name   string
		remote bool // allow_remote
		local  net.Addr
		from   string
		want   bool
	}{
		{"ipv4 loopback", false, tcp("127.0.0.1:9225"), "127.0.0.1:50000", true},
		{"other 127/8", false, tcp("127.0.0.2:9225"), "127.0.0.3:50000", true},
		{"ipv6 loopback", false, tcp("[::1]:9225"), "[::1]:50000", true},
		{"ipv4-mapped loopback", false, tcp("[::ffff:127.0.0.1]:9225"), "[::ffff:127.0.0.1]:50000", true},
		{"remote client", false, tcp("192.0.2.2:9225"), "198.51.100.9:50000", false},
		{"local non-loopback address", false, tcp("192.0.2.2:9225"), "192.0.2.2:50000", false},
		{"unspecified local", false, tcp("[::]:9225"), "127.0.0.1:50000", false},
		{"no local address", false, nil, "127.0.0.1:50000", false},
		{"unreadable remote", false, tcp("127.0.0.1:9225"), "@", false},
		{"allow_remote", true, tcp("192.0.2.2:9225"), "198.51.100.9:50000", true},
		{"allow_remote, no addresses", true, nil, "", true},
	} {
		ok, why := adminAllowed(config.AdminConfig{Enabled: true, AllowRemote: tc.remote}, tc.local, tc.from)
		if ok != tc.want || (!ok && (!strings.Contains(why, "admin.allow_remote: true") || !strings.Contains(why, tc.from))) {
			t.Errorf("%s: allowed %v (%q), want %v", tc.name, ok, why, tc.want)
		}
	}
}
