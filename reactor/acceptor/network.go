package acceptor

import (
	"net"
	"net/netip"
)

// BindNetwork returns the network to bind addr ("host:port") on when it
// was configured with network. Only "tcp" is refined, by the host:
//
//   - an IPv4 literal (0.0.0.0, 127.0.0.1, ...) binds "tcp4", an AF_INET
//     socket that takes IPv4 only. Go's "tcp" would bind 0.0.0.0 as a
//     dual-stack AF_INET6 socket on [::], which firewall rules written for
//     IPv4 do not cover.
//   - the IPv6 wildcard [::] stays "tcp": Go binds an AF_INET6 socket and
//     clears IPV6_V6ONLY itself, so it takes IPv6 and IPv4 (as mapped
//     addresses) whatever the system default (Linux's net.ipv6.bindv6only,
//     the BSDs' net.inet6.ip6.v6only, on by default there). OpenBSD and
//     DragonFly cannot clear IPV6_V6ONLY, so there [::] takes IPv6 only.
//   - any other IPv6 literal ([::1], [2001:db8::1], [fe80::1%eth0]) binds
//     "tcp6": a specific IPv6 address takes IPv6 only either way.
//   - a host name, or an empty host (":25577", every address, dual-stack
//     as [::]), stays "tcp".
//
// An explicit "tcp4", "tcp6" or "unix" is kept.
func BindNetwork(network, addr string) string {
	if network != "tcp" {
		return network
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return network
	}
	ip, err := netip.ParseAddr(host)
	switch {
	case err != nil:
		return network // a host name or an empty host
	case ip.Is4():
		return "tcp4"
	case ip.IsUnspecified():
		return network // [::]: dual-stack
	default:
		return "tcp6"
	}
}
