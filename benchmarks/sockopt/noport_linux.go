package sockopt

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// noPortAtBind makes a socket bound to a source address take its port at
// connect, not at bind (IP_BIND_ADDRESS_NO_PORT): bind alone must pick a
// port no socket on that address holds, TIME_WAIT ones included, so after
// some 30,000 connections per source address every bind failed with
// "address already in use", and a storm from one source to several proxies
// in turn ran out of ports; at connect only the whole address pair must be
// unique.
func noPortAtBind(_, _ string, rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
	}); err != nil {
		return err
	}
	return serr
}
