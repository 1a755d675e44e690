//go:build !linux

package storm

import "syscall"

// bindNoPort does nothing where IP_BIND_ADDRESS_NO_PORT does not exist.
func bindNoPort(network, address string, rc syscall.RawConn) error { return nil }
