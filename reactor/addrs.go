package reactor

// gnet keeps, for a connection's whole life, the *net.TCPAddr pair of the
// net.Conn it enrolled (an accept or a connect of ours), and the IP of each
// is a slice into the syscall.Sockaddr the kernel call returned: that
// Sockaddr (32 bytes for IPv4, 64 for IPv6) stays alive only for those 4 or
// 16 bytes, four of them per proxied session. So once a connection opens,
// its addresses' IPs are pointed at one copy per distinct IP on the loop
// (package ipshare) and the Sockaddrs go. gnet reads them on the loop only
// (release reads the zone), see gnetReliances.

import "net"

// shareAddrIPs points the IPs of a newly opened connection's addresses at
// the loop's shared copies.
func (l *Loop) shareAddrIPs(local, remote net.Addr) {
	l.ips.Share(local)
	l.ips.Share(remote)
}
