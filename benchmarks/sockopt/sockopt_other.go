//go:build !unix

// Package sockopt sets the socket options the load tools size their
// sockets with, before connect or listen (net.Dialer and
// net.ListenConfig Control functions).
package sockopt

import "syscall"

// Control leaves the socket alone off Unix (nil: no Control function).
func Control(rcvBuf, sndBuf, mss int) func(network, address string, rc syscall.RawConn) error {
	return nil
}
