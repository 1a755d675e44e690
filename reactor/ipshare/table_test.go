package ipshare

import (
	"net"
	"testing"
	"unsafe"
)

// TestSharedIPsBounded: more distinct client IPs than MaxShared never
// grow a table past its bound; every address still says what it
// said (in its own length, 4 or 16 bytes), and an IP seen since the table
// last started over is shared: its second address points at the first's
// copy, not at the slice it came with.
func TestSharedIPsBounded(t *testing.T) {
	var tab Table
	for i := range 3 * MaxShared {
		ip4 := net.IPv4(10, byte(i>>16), byte(i>>8), byte(i))
		for _, ip := range []net.IP{ip4.To4(), ip4.To16()} {
			orig := append(net.IP(nil), ip...)
			a, b := &net.TCPAddr{IP: ip, Port: 1}, &net.TCPAddr{IP: append(net.IP(nil), ip...), Port: 2}
			tab.Share(a)
			tab.Share(b)
			if tab.Len() > MaxShared {
				t.Fatalf("after %d IPs the table holds %d, want at most %d", i+1, tab.Len(), MaxShared)
			}
			for _, x := range []*net.TCPAddr{a, b} {
				if !x.IP.Equal(orig) || len(x.IP) != len(orig) {
					t.Fatalf("IP %v (%d bytes) became %v (%d bytes)", orig, len(orig), x.IP, len(x.IP))
				}
			}
			if unsafe.SliceData(a.IP) != unsafe.SliceData(b.IP) {
				t.Fatalf("%v: two addresses of one IP hold separate copies", orig)
			}
			if unsafe.SliceData(a.IP) == unsafe.SliceData(ip) {
				t.Fatalf("%v: the address still points at the slice it came with", orig)
			}
		}
	}
	tab.Share(&net.UnixAddr{Name: "x", Net: "unix"}) // not TCP: left alone
}
