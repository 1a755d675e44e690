//go:build !linux

package sockopt

import "syscall"

// noPortAtBind does nothing here: IP_BIND_ADDRESS_NO_PORT is Linux's.
func noPortAtBind(_, _ string, _ syscall.RawConn) error { return nil }
