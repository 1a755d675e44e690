package reactor

import (
	"net"
	"net/netip"
)

// gnet keeps, for a connection's whole life, the *net.TCPAddr pair of the
// net.Conn it enrolled (an accept or a connect of ours), and the IP of each
// is a slice into the syscall.Sockaddr the kernel call returned: that
// Sockaddr (32 bytes for IPv4, 64 for IPv6) stays alive only for those 4 or
// 16 bytes, four of them per proxied session. So once a connection opens,
// its addresses' IPs are pointed at one copy per distinct IP on the loop
// and the Sockaddrs go. This changes what the addresses point at, not what
// they say; gnet reads them on the loop only (release reads the zone).

// maxSharedIPs bounds a loop's table of shared IPs. Local addresses and
// backends are few; client addresses are as many as there are clients, so
// a full table starts over: the IPs in use keep their copies, and the
// common ones (a load balancer's, a NAT's) are shared again from the next
// connection on.
const maxSharedIPs = 256

// shareAddrIPs points the IPs of a newly opened connection's addresses at
// the loop's shared copies.
func (l *Loop) shareAddrIPs(local, remote net.Addr) {
	l.shareIP(local)
	l.shareIP(remote)
}

func (l *Loop) shareIP(a net.Addr) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return
	}
	key, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return
	}
	if ip, ok := l.ips[key]; ok {
		ta.IP = ip
		return
	}
	if len(l.ips) >= maxSharedIPs {
		clear(l.ips)
	}
	ip := append(net.IP(nil), ta.IP...) // as long as the original: 4 or 16 bytes
	l.ips[key] = ip
	ta.IP = ip
}
