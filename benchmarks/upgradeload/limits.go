package upgradeload

import (
	"fmt"

	"github.com/tidegate/tidegate/benchmarks/fdlimit"
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
type FDLimit = fdlimit.Limit

// fits says whether n sessions fit in lim, in this tool and in the proxy
// (which inherits it), and if not what the most that fit is.
func fits(n int, lim FDLimit) error {
	return fdlimit.Check(n, lim.Soft, fmt.Sprintf("raise the hard limit of %d (ulimit -Hn) or use fewer --sessions", lim.Hard),
		fdlimit.Holder{Name: "this tool", PerSession: 2, Holds: "its client socket and the echo backend's", Reserve: toolReserve},
		fdlimit.Holder{Name: "the proxy, which inherits this tool's limit", PerSession: 2, Reserve: proxyReserve})
}
