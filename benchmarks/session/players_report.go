package session

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// PlayersMethodNotes explain how the players workload's figures were
// taken; the report prints them.
var PlayersMethodNotes = []string{
	"Each repeat runs a direct phase (client to backend) and a proxy phase (client to proxy to backend) per target; " +
		"direct goes first in odd-numbered repeats, proxy in even-numbered ones, and the target order rotates per repeat.",
	"Every session logs in (offline, protocol 5) and then sends its frames on a fixed schedule, whether or not its replies " +
		"came (open loop): frame n of session i is due at n/rate + i/(rate × sessions) seconds, so the sessions' sends are " +
		"spread evenly over each period. A few sender goroutines write them, waking at most once a --send-tick; each frame " +
		"carries its real send time. The backend (tidegate backend --chunk-replies) echoes every frame, except that one in " +
		"chunk-every of a session's frames asks it for a chunk-sized frame instead.",
	"Every reply is checked against what was sent (size, session, sequence, send time, every byte); a reply lost, " +
		"duplicated or corrupted, or missing --drain after the last send, is counted, and the phase's figures enter no median.",
	"Latency is each reply's arrival less its frame's send time, for the frames due in the measured interval (after " +
		"--warmup, for --duration), whenever they went out; added latency is a proxy phase's quantile less that of the direct phase of the same repeat.",
	"CPU ns/frame is the proxy processes' on-CPU time (sum of /proc/PID/task/*/schedstat field 1) over the measured " +
		"interval divided by the frames relayed in it, both directions; vs best peer divides it by the lowest median of " +
		"the other peers (HAProxy, nginx, goproxy).",
	"RSS per session is the proxy's VmRSS at the end of the measured interval less its VmRSS before the sessions of " +
		"its first phase connected, divided by the sessions. The proxies run for the whole benchmark: a later phase is " +
		"measured from the same baseline, so memory a proxy kept from an earlier phase still counts in it.",
	"Send late is how long after its due time each send of the measured interval was written; a sender wakes at most " +
		"once a --send-tick, so up to a tick (half of one on average) is the design. An overloaded load generator shows " +
		"here first (with its CPU, percent of one core), and its latency figures then measure it, not the proxy.",
	"On a small machine the load generator, backend and proxy compete for cores. Loopback numbers are not capacity claims.",
}

// writePlayersTables prints the players workload's summary tables and goals.
func writePlayersTables(w io.Writer, r *Result) {
	for i, t := range []playersTable{playersPhaseTable(r), playersProxyTable(r)} {
		if i > 0 {
			fmt.Fprintln(w)
		}
		harness.TextTable{}.Write(w, t.head, t.rows)
	}
	for _, g := range r.Goals {
		fmt.Fprintf(w, "goal %s\n", g)
	}
	for _, g := range r.TerminatedGoals {
		fmt.Fprintf(w, "goal #22 %s\n", g)
	}
}

// writePlayersMarkdown writes the players workload's summary tables and goals.
func writePlayersMarkdown(b *strings.Builder, r *Result) {
	for i, t := range []playersTable{playersPhaseTable(r), playersProxyTable(r)} {
		if i > 0 {
			b.WriteString("\n")
		}
		harness.MarkdownTable(b, t.title, strings.Repeat("l", t.names)+strings.Repeat("r", len(t.title)-t.names), t.rows)
	}
	b.WriteString("\n")
	for _, g := range r.Goals {
		fmt.Fprintf(b, "Goal, %s.\n\n", g)
	}
	for _, g := range r.TerminatedGoals {
		fmt.Fprintf(b, "Goal of issue #22, %s.\n\n", g)
	}
}

// playersTable is one of the players workload's summary tables, which
// the terminal and the report print alike.
type playersTable struct {
	head  []string // the terminal's column headings
	title []string // the report's
	names int      // the first columns, which name a row; the others are figures
	rows  [][]string
}

// playersPhaseTable is a line per target and kind of phase.
func playersPhaseTable(r *Result) playersTable {
	t := playersTable{
		head: []string{"target", "phase", "frames/s", "MiB/s", "p50 ms", "p99 ms", "p99.9 ms", "send late mean ms", "send late max ms", "generator CPU %", "errors"},
		title: []string{"Target", "Phase", "Frames/s", "MiB/s", "p50 ms", "p99 ms", "p99.9 ms", "Send late mean ms", "Send late max ms",
			"Generator CPU %", "Errors"},
		names: 2,
	}
	for _, s := range r.Summary {
		for _, row := range playersRows(s) {
			t.rows = append(t.rows, []string{s.Target, row.kind, row.ps.FramesPerSec.Short(0), row.ps.MiBPerSec.Short(1),
				row.ps.P50Ms.Short(3), row.ps.P99Ms.Short(3), row.ps.P999Ms.Short(3), row.late.MeanMs.Short(3),
				row.late.MaxMs.Short(3), row.late.GeneratorCPUPercent.Short(0), strconv.FormatInt(row.ps.Errors, 10)})
		}
	}
	return t
}

// playersProxyTable is a line per target of the proxy's figures.
func playersProxyTable(r *Result) playersTable {
	t := playersTable{
		head: []string{"target", "CPU ns/frame", "vs best peer", "added p50 ms", "added p99 ms", "added p99.9 ms", "RSS KiB/session", "RSS MiB",
			"syscalls/frame", "logins/s", "CPU µs/login"},
		title: []string{"Target", "CPU ns/frame", "vs best peer", "Added p50 ms", "Added p99 ms", "Added p99.9 ms", "RSS KiB/session", "RSS MiB",
			"Syscalls/frame", "Logins/s", "CPU µs/login"},
		names: 1,
	}
	for _, s := range r.Summary {
		pl := playersOf(s)
		t.rows = append(t.rows, []string{s.Target, s.CPUNsPerFrame.Short(0), vsBestPeer(pl), pl.AddedP50Ms.Short(3), pl.AddedP99Ms.Short(3),
			pl.AddedP999Ms.Short(3), pl.RSSPerSessionKiB.Short(1), s.RSSMiB.Short(1), s.SyscallsPerFrame.Short(3),
			pl.LoginsPerSec.Short(0), pl.LoginCPUUs.Short(0)})
	}
	return t
}

// playersRow is one line of the players phase table.
type playersRow struct {
	kind string
	ps   PhaseStats
	late SendLate
}

// playersRows returns a target's direct and proxy lines.
func playersRows(s Summary) []playersRow {
	pl := playersOf(s)
	return []playersRow{{KindDirect, s.Direct, pl.Direct}, {KindProxy, s.Proxy, pl.Proxy}}
}

// playersOf returns a summary's players figures, empty where it has none.
func playersOf(s Summary) PlayersSummary {
	if s.Players == nil {
		return PlayersSummary{}
	}
	return *s.Players
}

// vsBestPeer formats a target's CPU ns/frame over the best other peer's.
func vsBestPeer(pl PlayersSummary) string {
	if pl.CPUVsBestPeer == nil {
		return "–"
	}
	return strconv.FormatFloat(*pl.CPUVsBestPeer, 'f', 2, 64) + "× " + pl.BestPeer
}

// String says how the target fared against each goal.
func (g PlayersGoal) String() string {
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	return fmt.Sprintf("%s: CPU/frame %.0f ns, %.2f× %s's %.0f (goal at most %.1f×: %s); added p99 %.3f ms against %s's %.3f (goal no worse: %s)",
		g.Target, g.CPUNsPerFrame, g.CPUVsPeer, g.CPUPeer, g.PeerCPUNsPerFrame, GoalCPUVsBestPeer, met(g.CPUMet),
		g.AddedP99Ms, g.LatencyPeer, g.PeerAddedP99Ms, met(g.LatencyMet))
}
