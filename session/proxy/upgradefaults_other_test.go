//go:build !linux

package proxy

import "testing"

// descriptorLimitAtAdoption is Linux's (upgradefaults_linux_test.go).
func descriptorLimitAtAdoption(t *testing.T) {
	t.Skip("the descriptor limit is set with Linux's RLIMIT_NOFILE type")
}

// descriptorLimitAtReceive is Linux's (upgradefaults_linux_test.go).
func descriptorLimitAtReceive(t *testing.T, _, _ *Proxy) <-chan struct{} {
	t.Skip("the descriptor limit is set with Linux's RLIMIT_NOFILE type")
	return nil
}
