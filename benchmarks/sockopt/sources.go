package sockopt

import (
	"fmt"
	"net"
	"strings"
)

// ParseSources parses --sources, a comma-separated list of local IP
// addresses a load tool's connections come from; an empty list means the
// system's choice.
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

// SourceDialer returns a dialer for connection i bound to sources[i %
// len(sources)], or an unbound one for no sources. Several loopback source
// addresses are what lets a storm or a hold go past the ~28k ephemeral
// ports of one (source, destination) pair.
func SourceDialer(sources []net.IP, i int) *net.Dialer {
	d := &net.Dialer{}
	if len(sources) > 0 {
		d.LocalAddr = &net.TCPAddr{IP: sources[i%len(sources)]}
		d.Control = noPortAtBind
	}
	return d
}
