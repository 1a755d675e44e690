//go:build !linux

package fdlimit

import "testing"

// Free skips t: the descriptor limit is set with Linux's RLIMIT_NOFILE type.
func Free(t testing.TB, free int) (restore func()) {
	t.Skip("the descriptor limit is set with Linux's RLIMIT_NOFILE type")
	return func() {}
}

// None skips t: the descriptor limit is set with Linux's RLIMIT_NOFILE type.
func None(t testing.TB) (restore func()) {
	t.Skip("the descriptor limit is set with Linux's RLIMIT_NOFILE type")
	return func() {}
}
