//go:build !linux

package upgradeload

import (
	"fmt"
	"time"
)

// becomeSubreaper does nothing here: only Linux has child subreapers. The
// new proxy is then reparented to init, and waitGone watches its pid.
func becomeSubreaper() error { return nil }

// waitGone waits up to timeout until pid no longer exists; its exit status
// is unknown here ("").
func waitGone(pid int, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("pid %d still running %s after it was told to stop", pid, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "", nil
}
