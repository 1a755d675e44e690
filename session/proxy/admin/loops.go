package admin

import (
	"cmp"
	"context"
	"net/netip"
	"slices"
	"time"

	"github.com/tidegate/tidegate/session/proxy/config"
)

// What the event loops hand the admin API, and how their answers are
// merged. A loop copies plain values (no formatting or allocation per
// session or refusal); the merge, on the request's goroutine, sorts and
// formats them.

// RecentPerLoop is how many refusals each loop remembers.
const RecentPerLoop = 64

// Refusal is one refusal, as a loop remembers it.
type Refusal struct {
	At                int64 // unix nanoseconds
	Remote            netip.AddrPort
	Reason            string // one of Options.Reasons
	Host, User, Group string
}

// RefusalRing holds a loop's last RecentPerLoop refusals. It is written and
// read only on its loop.
type RefusalRing struct {
	buf [RecentPerLoop]Refusal
	n   uint64 // refusals written so far
}

// Add remembers x, forgetting the oldest refusal when the ring is full.
func (r *RefusalRing) Add(x Refusal) {
	r.buf[r.n%RecentPerLoop] = x
	r.n++
}

// AppendTo appends the refusals the ring holds, oldest first.
func (r *RefusalRing) AppendTo(out []Refusal) []Refusal {
	start := uint64(0)
	if r.n > RecentPerLoop {
		start = r.n - RecentPerLoop
	}
	for i := start; i < r.n; i++ {
		out = append(out, r.buf[i%RecentPerLoop])
	}
	return out
}

// NewestRejections returns, newest first, at most limit of the refusals
// the loops answered with.
func NewestRejections(loops [][]Refusal, limit int) []Rejection {
	var all []Refusal
	for _, rs := range loops {
		all = append(all, rs...)
	}
	slices.SortStableFunc(all, func(a, b Refusal) int { return cmp.Compare(b.At, a.At) })
	all = all[:min(len(all), max(limit, 0))]
	out := make([]Rejection, len(all))
	for i, r := range all {
		out[i] = Rejection{At: time.Unix(0, r.At), Remote: addrString(r.Remote), Reason: r.Reason, Host: r.Host, User: r.User, Group: r.Group}
	}
	return out
}

// addrString is a's text; "" when it is not valid.
func addrString(a netip.AddrPort) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// SessionRow is a session as a loop copies it.
type SessionRow struct {
	Remote         netip.AddrPort
	Listener       *config.ListenerConfig // may be nil
	Host, User     string
	Group, Backend string
	Protocol       int32
	State          string // see SessionInfo.State
	Opened         int64  // unix nanoseconds; 0 when not known
}

// LoopSessions is one loop's answer to Source.Sessions.
type LoopSessions struct {
	// Open counts the loop's sessions, and Matched those that passed the
	// filter, which the maps count and Rows lists (at most the limit).
	Open, Matched int
	Rows          []SessionRow
	ByHost        map[string]int
	ByBackend     map[[2]string]int // by group and backend address
	ByState       map[string]int
}

// NewLoopSessions returns an empty answer, its maps made.
func NewLoopSessions() LoopSessions {
	return LoopSessions{ByHost: map[string]int{}, ByBackend: map[[2]string]int{}, ByState: map[string]int{}}
}

// Add counts an open session, row: when it passes f, in the maps and,
// within f.Limit, in Rows.
func (ls *LoopSessions) Add(f *SessionFilter, row SessionRow) {
	ls.Open++
	if !f.Matches(row.Host, row.User, row.Group, row.Backend) {
		return
	}
	ls.Matched++
	ls.ByHost[row.Host]++
	if row.Backend != "" {
		ls.ByBackend[[2]string{row.Group, row.Backend}]++
	}
	ls.ByState[row.State]++
	if len(ls.Rows) < f.Limit {
		ls.Rows = append(ls.Rows, row)
	}
}

// Summarize merges the loops' answers, of which missing loops gave none,
// into the summary of the sessions that passed a filter listing at most
// limit: the counts most first, the sessions oldest first.
func Summarize(loops []LoopSessions, missing, limit int) SessionsSummary {
	sum := SessionsSummary{ByHost: []HostCount{}, ByBackend: []BackendCount{}, ByState: map[string]int{}, Sessions: []SessionInfo{}, LoopsUnanswered: missing}
	hosts := map[string]int{}
	backends := map[[2]string]int{}
	var rows []SessionRow
	for _, ls := range loops {
		sum.Open += ls.Open
		sum.Matched += ls.Matched
		for h, n := range ls.ByHost {
			hosts[h] += n
		}
		for b, n := range ls.ByBackend {
			backends[b] += n
		}
		for st, n := range ls.ByState {
			sum.ByState[st] += n
		}
		rows = append(rows, ls.Rows...)
	}
	for h, n := range hosts {
		sum.ByHost = append(sum.ByHost, HostCount{Host: h, Sessions: n})
	}
	slices.SortFunc(sum.ByHost, func(a, b HostCount) int {
		return cmp.Or(cmp.Compare(b.Sessions, a.Sessions), cmp.Compare(a.Host, b.Host))
	})
	for b, n := range backends {
		sum.ByBackend = append(sum.ByBackend, BackendCount{Group: b[0], Backend: b[1], Sessions: n})
	}
	slices.SortFunc(sum.ByBackend, func(a, b BackendCount) int {
		return cmp.Or(cmp.Compare(b.Sessions, a.Sessions), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Backend, b.Backend))
	})
	slices.SortFunc(rows, func(a, b SessionRow) int {
		return cmp.Or(cmp.Compare(a.Opened, b.Opened), a.Remote.Compare(b.Remote))
	})
	sum.Truncated = sum.Matched > limit
	for _, r := range rows[:min(len(rows), limit)] {
		info := SessionInfo{Remote: addrString(r.Remote), Host: r.Host, User: r.User, Protocol: r.Protocol,
			Group: r.Group, Backend: r.Backend, State: r.State}
		if r.Listener != nil {
			info.Listener, info.Mode = r.Listener.Listen, r.Listener.Mode
		}
		if r.Opened != 0 {
			info.Since = time.Unix(0, r.Opened)
		}
		sum.Sessions = append(sum.Sessions, info)
	}
	return sum
}

// Gather asks each of n loops for its answer and returns the answers that
// came before ctx ended, and how many loops did not answer. post(i, answer)
// queues the question on loop i, which calls answer once with its copy; it
// reports false when the loop cannot run it (stopped). A loop that answers
// late sends into a buffered channel, so nothing waits for it.
func Gather[T any](ctx context.Context, n int, post func(i int, answer func(T)) bool) ([]T, int) {
	ch := make(chan T, n)
	asked := 0
	for i := range n {
		if post(i, func(v T) { ch <- v }) {
			asked++
		}
	}
	out := make([]T, 0, asked)
	for range asked {
		select {
		case v := <-ch:
			out = append(out, v)
		case <-ctx.Done():
			return out, n - len(out)
		}
	}
	return out, n - len(out)
}
