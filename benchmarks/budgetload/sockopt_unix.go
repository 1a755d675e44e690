//go:build unix

package budgetload

import (
	"fmt"
	"syscall"
)

// setRcvBuf returns a net.ListenConfig Control function that sets
// SO_RCVBUF to n on the listening socket, before listen, so that every
// accepted socket inherits it and the window it advertises stays small from
// the handshake on.
func setRcvBuf(n int) func(network, address string, rc syscall.RawConn) error {
	return func(network, address string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("SO_RCVBUF %d on %s: %w", n, address, serr)
		}
		return nil
	}
}
