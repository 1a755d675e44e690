package config

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/tidegate/tidegate/protocol/proxyproto"
)

// ProxyProtocolConfig is a listener's PROXY protocol setting.
type ProxyProtocolConfig struct {
	// Accept is the header versions connections must start with: off (the
	// default), v1, v2 or any.
	Accept string `yaml:"accept"`
	// Trusted lists the IP addresses and CIDR prefixes (of the load
	// balancers) that may connect; a connection from any other address
	// is refused.
	Trusted []string `yaml:"trusted"`
}

// PROXY protocol settings: proxy_protocol.accept takes all four,
// send_proxy_protocol all but any.
const (
	ProxyProtocolOff = "off"
	ProxyProtocolV1  = "v1"
	ProxyProtocolV2  = "v2"
	ProxyProtocolAny = "any"
)

// proxyVersions maps a setting to the versions it names; "" is off.
func proxyVersions(s string) (proxyproto.Versions, bool) {
	switch s {
	case "", ProxyProtocolOff:
		return 0, true
	case ProxyProtocolV1:
		return proxyproto.V1, true
	case ProxyProtocolV2:
		return proxyproto.V2, true
	case ProxyProtocolAny:
		return proxyproto.Any, true
	}
	return 0, false
}

// parseTrusted parses one proxy_protocol.trusted entry: an IP address or a
// CIDR prefix (its host bits are ignored).
func parseTrusted(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// checkProxyProtocol reports the problems of a listener's proxy_protocol.
func checkProxyProtocol(bad func(path, format string, args ...any), path string, pp ProxyProtocolConfig) {
	vs, ok := proxyVersions(pp.Accept)
	if !ok {
		bad(path+".accept", "%q: want off, v1, v2 or any", pp.Accept)
		return
	}
	switch {
	case vs == 0 && len(pp.Trusted) > 0:
		bad(path+".accept", "accept is off, so trusted has no effect: set accept to v1, v2 or any (what the load balancer sends), or remove trusted")
	case vs != 0 && len(pp.Trusted) == 0:
		bad(path+".trusted", "accept is %s but no source is trusted, so every connection would be refused: list the load balancers' addresses or CIDR prefixes, as [10.0.0.0/8]", pp.Accept)
	}
	for i, t := range pp.Trusted {
		if _, ok := parseTrusted(t); !ok {
			bad(fmt.Sprintf("%s.trusted[%d]", path, i), "%q: want an IP address or a CIDR prefix, as 192.0.2.10 or 10.0.0.0/8", t)
		}
	}
}

// checkSendProxyProtocol reports a group's bad send_proxy_protocol.
func checkSendProxyProtocol(bad func(path, format string, args ...any), path, v string) {
	if vs, ok := proxyVersions(v); !ok || vs == proxyproto.Any {
		bad(path, "%q: want off, v1 or v2", v)
	}
}

// Versions returns the header versions the listener accepts; 0 when it
// takes none. The setting must have passed the checks.
func (pp ProxyProtocolConfig) Versions() proxyproto.Versions {
	vs, _ := proxyVersions(pp.Accept)
	return vs
}

// TrustedPrefixes returns the trusted sources as prefixes (an address is a
// prefix of its full length), leaving out entries the checks refuse.
func (pp ProxyProtocolConfig) TrustedPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, t := range pp.Trusted {
		if p, ok := parseTrusted(t); ok {
			out = append(out, p)
		}
	}
	return out
}

// SendVersions returns the PROXY header version the group's backends get;
// 0 for none. The setting must have passed the checks.
func (g GroupConfig) SendVersions() proxyproto.Versions {
	vs, _ := proxyVersions(g.SendProxyProtocol)
	return vs
}

// ProxyAccept is a listener's proxy_protocol as sessions use it.
type ProxyAccept struct {
	Versions proxyproto.Versions
	Trusted  []netip.Prefix
}

// Trusts reports whether addr may send a PROXY header.
func (a *ProxyAccept) Trusts(addr netip.Addr) bool {
	addr = addr.Unmap().WithZone("")
	for _, p := range a.Trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// ProxyAccepts returns the PROXY settings of the listeners that accept a
// header, from a validated configuration.
func ProxyAccepts(byIndex map[int]*ListenerConfig) map[*ListenerConfig]*ProxyAccept {
	out := map[*ListenerConfig]*ProxyAccept{}
	for _, l := range byIndex {
		vs := l.ProxyProtocol.Versions()
		if vs == 0 {
			continue
		}
		out[l] = &ProxyAccept{Versions: vs, Trusted: l.ProxyProtocol.TrustedPrefixes()}
	}
	return out
}

// AddrPortOf returns a TCP address as a netip.AddrPort, IPv4-mapped
// addresses unmapped; the zero AddrPort for anything else.
func AddrPortOf(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		ap := t.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}

func UnmapAddrPort(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}
