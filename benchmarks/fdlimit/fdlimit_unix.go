//go:build unix

package fdlimit

import (
	"fmt"
	"syscall"
)

// Read returns this process's descriptor limit.
func Read() (Limit, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return Limit{}, fmt.Errorf("reading this process's descriptor limit: %w", err)
	}
	return Limit{Soft: uint64(lim.Cur), Hard: uint64(lim.Max)}, nil
}

// Raise raises this process's soft descriptor limit to the hard one and
// returns the limit in force. It calls setrlimit even when the two are
// equal: Go then no longer gives child processes the soft limit this
// process started with, so a proxy it starts inherits the raised one.
func Raise() (Limit, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return Limit{}, fmt.Errorf("reading this process's descriptor limit: %w", err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return Limit{}, fmt.Errorf("raising this process's soft descriptor limit to the hard limit %d: %w", uint64(lim.Max), err)
	}
	return Read()
}
