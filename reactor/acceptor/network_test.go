package acceptor

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

func TestBindNetwork(t *testing.T) {
	for _, c := range []struct{ network, addr, want string }{
		{"tcp", "0.0.0.0:25577", "tcp4"},
		{"tcp", "127.0.0.1:0", "tcp4"},
		{"tcp", "[::ffff:127.0.0.1]:0", "tcp6"}, // an IPv6 literal, though it names an IPv4 address
		{"tcp", "[::]:25577", "tcp"},
		{"tcp", "[::1]:0", "tcp6"},
		{"tcp", "[fe80::1%eth0]:0", "tcp6"},
		{"tcp", ":25577", "tcp"},
		{"tcp", "localhost:25577", "tcp"},
		{"tcp", "not an address", "tcp"},
		{"tcp4", "localhost:0", "tcp4"},
		{"tcp6", "[::]:0", "tcp6"},
		{"unix", "/run/x.sock", "unix"},
	} {
		if got := BindNetwork(c.network, c.addr); got != c.want {
			t.Errorf("BindNetwork(%q, %q) = %q, want %q", c.network, c.addr, got, c.want)
		}
	}
}

// listenOne binds a Set on the configured address a and returns its
// listener and the port it got, checking that the Set's Health reports
// the listener's own address.
func listenOne(t *testing.T, a string) (net.Listener, string) {
	t.Helper()
	g := &gate{enrolled: make(chan net.Conn, 4)}
	g.open.Store(true)
	s := NewSet(g, Config{Addrs: []string{a}, Logger: zerolog.Nop()})
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() {
		s.Stop()
		s.Wait()
		close(g.enrolled)
		for nc := range g.enrolled {
			nc.Close()
		}
	})
	ln := s.List()[0].ln
	if h := s.Health(); len(h) != 1 || h[0].Addr != ln.Addr().String() {
		t.Errorf("%s: Health %+v, want one listener at %s", a, h, ln.Addr())
	}
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return ln, port
}

// socketFamily returns the address family getsockname reports for ln.
func socketFamily(t *testing.T, ln net.Listener) string {
	t.Helper()
	rc, err := ln.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var sa unix.Sockaddr
	var serr error
	if err := rc.Control(func(fd uintptr) { sa, serr = unix.Getsockname(int(fd)) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	switch sa.(type) {
	case *unix.SockaddrInet4:
		return "AF_INET"
	case *unix.SockaddrInet6:
		return "AF_INET6"
	}
	return "other"
}

// dials reports whether a TCP connection to host:port is accepted.
func dials(host, port string) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 5*time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// hasIPv6Loopback reports whether the machine can listen on [::1].
func hasIPv6Loopback() bool {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// checkBind binds the configured address a and checks that the listener
// reports host and the port it got, that its socket is of family, and
// which of the loopback addresses 127.0.0.1 and ::1 it takes (a host in
// takes is tried only if withIPv6 or it is 127.0.0.1).
func checkBind(t *testing.T, a, host, family string, takes map[string]bool, withIPv6 bool) {
	t.Helper()
	ln, port := listenOne(t, a)
	if got, want := ln.Addr().String(), net.JoinHostPort(host, port); got != want {
		t.Errorf("%s: Addr %s, want %s", a, got, want)
	}
	if f := socketFamily(t, ln); f != family {
		t.Errorf("%s: socket family %s, want %s", a, f, family)
	}
	for _, peer := range []string{"127.0.0.1", "::1"} {
		if peer == "::1" && !withIPv6 {
			t.Logf("%s: no IPv6 loopback on this machine: not dialling [::1]", a)
			continue
		}
		if got := dials(peer, port); got != takes[peer] {
			t.Errorf("%s: a dial from %s to port %s connected: %v, want %v", a, peer, port, got, takes[peer])
		}
	}
}

// TestIPv4WildcardBindsIPv4Only: "0.0.0.0" binds an AF_INET socket, which
// reports itself as 0.0.0.0 and takes 127.0.0.1 but not [::1] (Go's "tcp"
// would have bound a dual-stack [::] socket that takes both).
func TestIPv4WildcardBindsIPv4Only(t *testing.T) {
	v6 := hasIPv6Loopback()
	for _, a := range []string{"0.0.0.0:0", "tcp://0.0.0.0:0"} {
		checkBind(t, a, "0.0.0.0", "AF_INET", map[string]bool{"127.0.0.1": true}, v6)
	}
}

// TestIPv6Binds: [::1] binds IPv6 only; [::] binds dual-stack, taking
// IPv4 as mapped addresses, as Go's "tcp" always did. (OpenBSD and
// DragonFly cannot clear IPV6_V6ONLY; this package is built and tested
// on Linux, macOS and FreeBSD, where Go clears it.)
func TestIPv6Binds(t *testing.T) {
	if !hasIPv6Loopback() {
		t.Skip("no IPv6 loopback on this machine (net.Listen(\"tcp6\", \"[::1]:0\") failed)")
	}
	checkBind(t, "[::1]:0", "::1", "AF_INET6", map[string]bool{"::1": true}, true)
	checkBind(t, "tcp://[::]:0", "::", "AF_INET6", map[string]bool{"127.0.0.1": true, "::1": true}, true)
}

// TestInheritedListenerKeepsItsFamily: a socket handed over by a live
// upgrade (Config.Listeners) is taken as it is, an AF_INET one staying
// IPv4 and reporting 0.0.0.0.
func TestInheritedListenerKeepsItsFamily(t *testing.T) {
	orig, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := orig.(*net.TCPListener).File()
	orig.Close()
	if err != nil {
		t.Fatal(err)
	}
	inherited, err := net.FileListener(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{enrolled: make(chan net.Conn, 4)}
	s := NewSet(g, Config{Addrs: []string{"0.0.0.0:25577"}, Listeners: []net.Listener{inherited}, Logger: zerolog.Nop()})
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	defer s.closeAll()
	a, err := s.Addr(0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.String(), "0.0.0.0:") || a.String() == "0.0.0.0:25577" {
		t.Errorf("inherited listener reports %s, want 0.0.0.0 and the inherited port", a)
	}
	if fam := socketFamily(t, s.List()[0].ln); fam != "AF_INET" {
		t.Errorf("inherited listener family %s, want AF_INET", fam)
	}
}
