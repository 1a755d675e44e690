package upgradeload

import (
	"fmt"
	"syscall"
)

// Descriptor reserves beyond two per session.
const (
	// toolReserve: this tool's listeners, the runtime's poller, log files,
	// health checks and the new-session check.
	toolReserve = 64
	// proxyReserve: the proxy's spare budget (limits.max_sessions 0 keeps
	// 128 free) and what it opens at start.
	proxyReserve = 200
)

// FDLimit is a process's RLIMIT_NOFILE.
type FDLimit struct {
	Soft uint64 `json:"soft"`
	Hard uint64 `json:"hard"`
}

// RaiseFDLimit raises this process's soft descriptor limit to the hard one
// and returns the limit in force. It calls setrlimit even when the two are
// equal: Go then no longer gives child processes the soft limit this
// process started with, so the proxy inherits the raised one.
func RaiseFDLimit() (FDLimit, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return FDLimit{}, fmt.Errorf("reading this process's descriptor limit: %w", err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return FDLimit{}, fmt.Errorf("raising this process's soft descriptor limit to the hard limit %d: %w", uint64(lim.Max), err)
	}
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return FDLimit{}, fmt.Errorf("reading this process's descriptor limit: %w", err)
	}
	return FDLimit{Soft: uint64(lim.Cur), Hard: uint64(lim.Max)}, nil
}

// fits says whether n sessions fit in lim, in this tool and in the proxy
// (which inherits it), and if not what the most that fit is.
func fits(n int, lim FDLimit) error {
	tool, proxy := uint64(2*n+toolReserve), uint64(2*n+proxyReserve)
	most := (int64(lim.Soft) - max(toolReserve, proxyReserve)) / 2
	switch {
	case tool > lim.Soft:
		return fmt.Errorf("%d sessions need about %d descriptors in this tool (2 per session, its client socket and the echo backend's, + %d), "+
			"its limit is %d (hard %d): at most %d sessions fit; raise the hard limit (ulimit -Hn) or use fewer --sessions",
			n, tool, toolReserve, lim.Soft, lim.Hard, max(most, 0))
	case proxy > lim.Soft:
		return fmt.Errorf("%d sessions need about %d descriptors in the proxy (2 per session + %d reserve), "+
			"which inherits this tool's limit of %d (hard %d): at most %d sessions fit; raise the hard limit (ulimit -Hn) or use fewer --sessions",
			n, proxy, proxyReserve, lim.Soft, lim.Hard, max(most, 0))
	}
	return nil
}
