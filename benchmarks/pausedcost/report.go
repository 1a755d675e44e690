package pausedcost

import (
	"fmt"
	"io"
	"strconv"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// WriteTables writes the summary by server (median [min–max] over the
// trials that did not fail) and every trial.
func WriteTables(w io.Writer, servers []Server, trials []Trial) error {
	var rows [][]string
	for _, s := range servers {
		mine := harness.Keep(trials, func(t Trial) bool { return t.Server == s.Label })
		ok := harness.Keep(mine, func(t Trial) bool { return t.Error == "" })
		spread := func(get func(Trial) float64, decimals int) string {
			if len(ok) == 0 {
				return "-"
			}
			return harness.SpreadOf(ok, get).Format(decimals)
		}
		rows = append(rows, []string{s.Label,
			spread(func(t Trial) float64 { return t.IdleCPU }, 2),
			spread(func(t Trial) float64 { return t.PausedCPU }, 2),
			spread(func(t Trial) float64 { return t.PausedCPU - t.IdleCPU }, 2),
			spread(func(t Trial) float64 { return t.IdleRuns }, 0),
			spread(func(t Trial) float64 { return t.PausedRuns }, 0),
			spread(func(t Trial) float64 { return t.PausedOther }, 1),
			fmt.Sprintf("%d of %d", len(mine)-len(ok), len(mine))})
	}
	if err := harness.MarkdownTable(w, []string{"server", "CPU % of a core, idle", "CPU %, paused", "paused − idle, points",
		"wake-ups/s, idle", "wake-ups/s, paused", "rest of machine CPU %, paused", "failed trials"}, "lrrrrrrr", rows); err != nil {
		return err
	}
	fmt.Fprintln(w)
	rows = rows[:0]
	for _, t := range trials {
		rows = append(rows, []string{strconv.Itoa(t.Repeat), strconv.Itoa(t.Pos), t.Server,
			harness.Fixed(t.IdleCPU, 2), harness.Fixed(t.PausedCPU, 2),
			harness.Fixed(t.IdleRuns, 0) + " / " + harness.Fixed(t.PausedRuns, 0),
			harness.Fixed(t.IdleOther, 1) + " / " + harness.Fixed(t.PausedOther, 1),
			strconv.Itoa(t.Held), harness.Fixed(t.QueuedKiB, 0), t.Error})
	}
	return harness.MarkdownTable(w, []string{"repeat", "#", "server", "idle CPU %", "paused CPU %", "wake-ups/s idle / paused",
		"rest of machine CPU % idle / paused", "held", "queued KiB each", "error"}, "rrlrrrrrrl", rows)
}
