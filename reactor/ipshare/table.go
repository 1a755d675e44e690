// Package ipshare keeps one copy of each IP that many addresses hold. A
// *net.TCPAddr from an accept or a connect holds its IP as a slice into the
// syscall.Sockaddr the kernel call returned, which then stays alive for
// those 4 or 16 bytes; pointed at a shared copy instead, the Sockaddr goes.
// This changes what the addresses point at, not what they say.
package ipshare

import (
	"net"
	"net/netip"
)

// MaxShared bounds a table. Local addresses and backends are few; client
// addresses are as many as there are clients, so a full table starts over:
// the IPs in use keep their copies, and the common ones (a load balancer's,
// a NAT's) are shared again from the next address on.
const MaxShared = 256

// Table holds the shared copies. Its zero value is empty; it is not safe
// for concurrent use (a loop owns one).
type Table struct {
	ips map[netip.Addr]net.IP
}

// Len returns the number of IPs the table holds.
func (t *Table) Len() int { return len(t.ips) }

// Share points a's IP at the table's copy of it, making the copy the first
// time; an address that is not a *net.TCPAddr is left alone.
func (t *Table) Share(a net.Addr) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return
	}
	key, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return
	}
	if ip, ok := t.ips[key]; ok {
		ta.IP = ip
		return
	}
	if t.ips == nil {
		t.ips = make(map[netip.Addr]net.IP)
	}
	if len(t.ips) >= MaxShared {
		clear(t.ips)
	}
	ip := append(net.IP(nil), ta.IP...) // as long as the original: 4 or 16 bytes
	t.ips[key] = ip
	ta.IP = ip
}
