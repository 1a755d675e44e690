//go:build linux

package sockopt

import (
	"net"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestControlSetsTheBuffersOfAListener(t *testing.T) {
	lc := net.ListenConfig{Control: Control(32<<10, 0, 0)}
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	raw, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var gerr error
	raw.Control(func(fd uintptr) { got, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) })
	// Linux doubles the size asked for, for its bookkeeping.
	if gerr != nil || got != 2*(32<<10) {
		t.Errorf("SO_RCVBUF = %d, %v; want %d", got, gerr, 2*(32<<10))
	}
}

func TestControlNamesTheOptionItCouldNotSet(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Linux refuses an MSS under 88 bytes (TCP_MIN_MSS).
	d := net.Dialer{Control: Control(0, 0, 10)}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err == nil {
		c.Close()
		t.Fatal("a dial with TCP_MAXSEG 10 succeeded")
	}
	if want := "TCP_MAXSEG 10 on " + ln.Addr().String(); !strings.Contains(err.Error(), want) {
		t.Errorf("dial error %q does not say %q", err, want)
	}
}
