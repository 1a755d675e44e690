// Package fdlimit reads and raises this process's descriptor limit
// (RLIMIT_NOFILE) and checks a load tool's sessions against it, for the
// tools that need many descriptors (storm, upgradeload, the players
// workload of session).
package fdlimit

import (
	"fmt"
	"math"
)

// Limit is a process's descriptor limit.
type Limit struct {
	Soft uint64 `json:"soft"`
	Hard uint64 `json:"hard"`
}

// Holder is one process's descriptors in a run: PerSession for each session
// and Reserve beside them (listeners, log files, the runtime's poller, a
// proxy's spare budget).
type Holder struct {
	// Name is the process as the error names it: "this tool", "a proxy".
	Name string
	// PerSession is the descriptors it holds per session; Holds, when not
	// empty, says what they are ("client and backend").
	PerSession int
	Holds      string
	Reserve    int
}

// Check returns nil when sessions sessions fit in limit descriptors in every
// holder. Otherwise its error names the first holder that runs out, what it
// needs, and the most sessions that fit in all of them, then says fix, what
// to do about it.
func Check(sessions int, limit uint64, fix string, holders ...Holder) error {
	for _, h := range holders {
		need := uint64(h.PerSession*sessions + h.Reserve)
		if need <= limit {
			continue
		}
		per := fmt.Sprintf("%d per session", h.PerSession)
		if h.Holds != "" {
			per += " (" + h.Holds + ")"
		}
		return fmt.Errorf("%d sessions need about %d descriptors in %s, %s + %d, over the descriptor limit of %d: at most %d sessions fit; %s",
			sessions, need, h.Name, per, h.Reserve, limit, Most(limit, holders...), fix)
	}
	return nil
}

// Most returns the most sessions that fit in limit descriptors in every
// holder (0 when none does). A holder with no descriptors per session
// bounds nothing.
func Most(limit uint64, holders ...Holder) int {
	most, l := -1, int64(min(limit, math.MaxInt64))
	for _, h := range holders {
		if h.PerSession <= 0 {
			continue
		}
		n := int(max(0, (l-int64(h.Reserve))/int64(h.PerSession)))
		if most < 0 || n < most {
			most = n
		}
	}
	return max(most, 0)
}
