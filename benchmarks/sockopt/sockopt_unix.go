//go:build unix

// Package sockopt sets the socket options the load tools size their
// sockets with, before connect or listen (net.Dialer and
// net.ListenConfig Control functions).
package sockopt

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Control returns a Control function that sets SO_RCVBUF, SO_SNDBUF and
// TCP_MAXSEG, each when positive. On a listener, accepted sockets inherit
// them, so the window they advertise is small from the handshake on.
func Control(rcvBuf, sndBuf, mss int) func(network, address string, rc syscall.RawConn) error {
	return func(_, address string, rc syscall.RawConn) error {
		var serr error
		set := func(fd uintptr, name string, level, opt, v int) {
			if serr == nil && v > 0 {
				if err := unix.SetsockoptInt(int(fd), level, opt, v); err != nil {
					serr = fmt.Errorf("%s %d on %s: %w", name, v, address, err)
				}
			}
		}
		if err := rc.Control(func(fd uintptr) {
			set(fd, "SO_RCVBUF", unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBuf)
			set(fd, "SO_SNDBUF", unix.SOL_SOCKET, unix.SO_SNDBUF, sndBuf)
			set(fd, "TCP_MAXSEG", unix.IPPROTO_TCP, unix.TCP_MAXSEG, mss)
		}); err != nil {
			return err
		}
		return serr
	}
}
