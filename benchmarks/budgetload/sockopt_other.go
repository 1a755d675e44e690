//go:build !unix

package budgetload

import "syscall"

// setRcvBuf leaves the listener alone off Unix; accepted connections still
// get SetReadBuffer.
func setRcvBuf(int) func(network, address string, rc syscall.RawConn) error { return nil }
