package harness

import (
	"fmt"
	"net"
)

// FreePortAttempts is how many free ports RetryFreePort tries.
const FreePortAttempts = 3

// FreeAddr returns host:port with a port that was free a moment ago.
func FreeAddr(host string) (string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("finding a free port on %s: %w", host, err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// RetryFreePort calls start with a free address on host, and again with
// another while it fails, FreePortAttempts times at most: another program
// can take a free port before the child binds it. The error is the last
// attempt's.
func RetryFreePort[T any](host string, start func(addr string) (T, error)) (T, error) {
	var zero T
	var lastErr error
	for range FreePortAttempts {
		addr, err := FreeAddr(host)
		if err != nil {
			return zero, err
		}
		v, err := start(addr)
		if err == nil {
			return v, nil
		}
		lastErr = err
	}
	return zero, lastErr
}
