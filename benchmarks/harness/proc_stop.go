package harness

// This file stops processes by pid that this program holds no Child of:
// the new process of a live upgrade (which the old one started) and what a
// failed upgrade left behind.

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/tidegate/tidegate/internal/procs"
)

// StopPID sends SIGTERM to pid and waits up to timeout for it to be gone
// (WaitGone), then kills it. It returns the exit WaitGone read ("" when
// pid is not this process's child), and early when pid was gone before the
// signal.
func StopPID(pid int, timeout time.Duration) (status string, early bool, err error) {
	if err := syscall.Kill(pid, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
		status, _ := WaitGone(pid, time.Second) // reaps it if it is this process's child
		return status, true, nil
	} else if err != nil {
		return "", false, fmt.Errorf("SIGTERM to pid %d: %w", pid, err)
	}
	status, err = WaitGone(pid, timeout)
	if err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		status, _ = WaitGone(pid, 5*time.Second)
		return status, false, fmt.Errorf("%w: killed", err)
	}
	return status, false, nil
}

// KillMarked kills (SIGKILL) every live process other than this one whose
// command line holds marker, such as a run's configuration path, waits up
// to 5 s for each to be gone, and returns their pids: the proxies a failed
// upgrade left behind. It finds nothing outside Linux.
func KillMarked(marker string) []int {
	pids := procs.WithMarker(marker)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range pids {
		_, _ = WaitGone(pid, 5*time.Second)
	}
	return pids
}
