package reactor

import (
	"errors"
	"net"
	"strings"
	"testing"
)

// TestDialErrorNamesTheAddressOnce: net's dial errors name the address, so
// DialError does not add it again; other causes get it.
func TestDialErrorNamesTheAddressOnce(t *testing.T) {
	const addr = "127.0.0.1:23599"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	_, netErr := net.Dial("tcp", refused)
	if netErr == nil {
		t.Fatalf("dialing %s, just closed, succeeded", refused)
	}
	for _, tc := range []struct {
		err  *DialError
		want string
	}{
		{&DialError{Addr: addr, Timeout: true}, "dial 127.0.0.1:23599: timed out"},
		{&DialError{Addr: addr, Local: true, Err: errDialQueueFull}, "dial 127.0.0.1:23599: too many connects in progress"},
		{&DialError{Addr: addr, Err: &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 23599},
			Err: errors.New("connect: connection refused")}}, "dial tcp 127.0.0.1:23599: connect: connection refused"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.err, got, tc.want)
		}
	}
	if got := (&DialError{Addr: refused, Err: netErr}).Error(); strings.Count(got, refused) != 1 {
		t.Errorf("%q does not name %s exactly once", got, refused)
	}
}

// TestListenErrorNamesTheAddressOnce: a listen address in use is refused
// with net's error, which names it, and nothing before it that does again.
func TestListenErrorNamesTheAddressOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	s, err := NewServer(Config{Addrs: []string{addr}, Loops: 1}, &echoHandler{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start()
	if err == nil {
		_ = s.Stop(t.Context())
		t.Fatalf("Start on %s, which is in use, succeeded", addr)
	}
	if n := strings.Count(err.Error(), addr); n != 1 || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Start: %q names %s %d times, want once with the cause", err, addr, n)
	}
	// The same for a listener added to a running server.
	running, _ := startServer(t, Config{Loops: 1}, &echoHandler{})
	_, err = running.AddListener(addr)
	if err == nil {
		t.Fatalf("AddListener on %s, which is in use, succeeded", addr)
	}
	if n := strings.Count(err.Error(), addr); n != 1 || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("AddListener: %q names %s %d times, want once with the cause", err, addr, n)
	}
}
