//go:build !linux

package harness

import (
	"fmt"
	"time"

	"github.com/tidegate/tidegate/internal/procs"
)

// BecomeSubreaper does nothing here: only Linux has child subreapers. The
// new proxy is then reparented to init, and WaitGone watches its pid.
func BecomeSubreaper() error { return nil }

// WaitGone waits up to timeout until pid no longer exists; its exit status
// is unknown here ("").
func WaitGone(pid int, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for procs.Alive(pid) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("pid %d still running %s after it was told to stop", pid, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "", nil
}
