// Package sockpair gives tests both ends of loopback TCP connections, and
// connections whose peer has reset them, as the sockets of a live upgrade
// can be by the time they are adopted.
package sockpair

import (
	"errors"
	"net"
	"testing"
	"time"
)

// TCP returns both ends of a loopback TCP connection, dialed and accepted,
// closed when the test ends.
func TCP(t testing.TB) (dialed, accepted net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// Reset resets c from its side (SO_LINGER 0, then close) and waits until
// other, its peer, has seen the reset.
func Reset(t testing.TB, c, other net.Conn) {
	t.Helper()
	_ = c.(*net.TCPConn).SetLinger(0)
	c.Close()
	_ = other.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer other.SetReadDeadline(time.Time{})
	if _, err := other.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("reading a connection its peer reset: %v", err)
	}
}

// ExpectEnded waits up to five seconds for c's peer to close or reset c.
func ExpectEnded(t testing.TB, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("%s is still open: %v", what, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
