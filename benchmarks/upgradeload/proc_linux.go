//go:build linux

package upgradeload

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes this process a child subreaper: a process that
// loses its parent below this one (the new proxy when the old one exits)
// becomes this process's child, whose exit it can wait for and read.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
}

// waitGone waits up to timeout for pid to exit. When pid is this process's
// child (a subreaper's orphan) it is reaped and its exit described
// ("exit status 0", "signal: killed"); otherwise it is gone once the pid no
// longer exists or is a zombie, and its status is unknown ("").
func waitGone(pid int, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		switch {
		case err == nil && got == pid:
			return describeWait(ws), nil
		case errors.Is(err, syscall.ECHILD):
			if !alive(pid) {
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

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z'
	}
	return true
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

// strays returns the live processes other than this one whose command line
// holds marker (the trial's configuration path): proxies that a failed
// upgrade left behind.
func strays(marker string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}
