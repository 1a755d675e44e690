package harness

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/tidegate/tidegate/internal/revision"
)

// Host describes the machine a run was made on.
type Host struct {
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	Kernel    string `json:"kernel,omitempty"`
	CPU       string `json:"cpu,omitempty"`
	NumCPU    int    `json:"num_cpu"`
	Poller    string `json:"poller"`
	GoVersion string `json:"go_version"`
	Revision  string `json:"revision,omitempty"`
}

// ThisHost describes this machine; the kernel and CPU model come from /proc
// (empty where it is missing), the revision from make build's stamp or else
// the build's VCS stamp.
func ThisHost() Host {
	h := Host{OS: runtime.GOOS, Arch: runtime.GOARCH, NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), Poller: Poller()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	h.Revision = revision.This()
	return h
}

// Poller names the readiness API gnet uses on this OS.
func Poller() string {
	switch runtime.GOOS {
	case "linux":
		return "epoll"
	case "darwin", "freebsd", "netbsd", "openbsd", "dragonfly":
		return "kqueue"
	}
	return "unknown"
}

// BinaryVersion returns what `path version` prints, trimmed: the version a
// tidegate binary was built as (make build sets it to git describe).
func BinaryVersion(ctx context.Context, path string) (string, error) {
	out, err := exec.CommandContext(ctx, path, "version").Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %w", path, err)
	}
	return strings.TrimSpace(string(out)), nil
}
