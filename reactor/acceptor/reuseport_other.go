//go:build !linux

package acceptor

import "errors"

// On BSD and macOS SO_REUSEPORT does not spread connections over the
// sockets sharing a port (gnet disables it there for the same reason).
func setReusePort(int) error {
	return errors.New("reuse_port spreads connections only on Linux")
}
