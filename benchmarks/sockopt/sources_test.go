package sockopt

import (
	"net"
	"testing"
)

func TestParseSourcesAndTheirDialers(t *testing.T) {
	ips, err := ParseSources(" 127.0.0.1, ,127.0.0.2")
	if err != nil || len(ips) != 2 || !ips[1].Equal(net.IPv4(127, 0, 0, 2)) {
		t.Fatalf("ParseSources = %v, %v; want 127.0.0.1 and 127.0.0.2", ips, err)
	}
	if _, err := ParseSources("127.0.0.1,nope"); err == nil {
		t.Fatal("ParseSources took \"nope\" for an address")
	}
	if d := SourceDialer(ips, 3); d.LocalAddr.(*net.TCPAddr).IP.String() != "127.0.0.2" {
		t.Errorf("dialer 3 of two sources binds %v, want 127.0.0.2", d.LocalAddr)
	}
	if d := SourceDialer(nil, 3); d.LocalAddr != nil {
		t.Errorf("dialer with no sources binds %v, want none", d.LocalAddr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := SourceDialer(ips, 1).Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial from 127.0.0.2: %v", err)
	}
	defer c.Close()
	if got := c.LocalAddr().(*net.TCPAddr).IP.String(); got != "127.0.0.2" {
		t.Errorf("connection from %s, want 127.0.0.2", got)
	}
}
