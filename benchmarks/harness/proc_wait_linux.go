//go:build linux

package harness

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tidegate/tidegate/internal/procs"
)

// BecomeSubreaper makes this process a child subreaper: a process that
// loses its parent below this one (the new proxy when the old one exits)
// becomes this process's child, whose exit it can wait for and read.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
}

// WaitGone waits up to timeout for pid to exit. When pid is this process's
// child (a subreaper's orphan) it is reaped and its exit described
// ("exit status 0", "signal: killed"); otherwise it is gone once the pid no
// longer exists or is a zombie, and its status is unknown ("").
func WaitGone(pid int, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		switch {
		case err == nil && got == pid:
			return describeWait(ws), nil
		case errors.Is(err, syscall.ECHILD):
			if !procs.Alive(pid) {
				return "", nil
			}
		case err != nil && !errors.Is(err, syscall.EINTR):
			return "", fmt.Errorf("waiting for pid %d: %w", pid, err)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("pid %d still running %s after it was told to stop", pid, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func describeWait(ws syscall.WaitStatus) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("exit status %d", ws.ExitStatus())
	case ws.Signaled():
		return "signal: " + ws.Signal().String()
	}
	return fmt.Sprintf("wait status %#x", uint32(ws))
}
