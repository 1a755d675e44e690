package pausedcost

import (
	"io"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/golden"
)

// goldenTrials are two servers of two trials each, one of which failed,
// and a third server whose only trial failed (no figure to summarize).
func goldenTrials() ([]Server, []Trial) {
	servers := []Server{{Label: "before", Binary: "a"}, {Label: "after", Binary: "b"}, {Label: "broken", Binary: "c"}}
	var ts [5]Trial
	for i := range ts {
		golden.Fill(&ts[i])
		ts[i].Server, ts[i].Repeat, ts[i].Pos, ts[i].Error = servers[i%2].Label, i/2, i%2, ""
		ts[i].PausedCPU = ts[i].IdleCPU + float64(i)/4
	}
	ts[3].Error = "the server exited during the trial"
	ts[4].Server, ts[4].Error = "broken", "starting the server: no such file"
	return servers, ts[:]
}

func TestReportGolden(t *testing.T) {
	servers, trials := goldenTrials()
	golden.Render(t, "tables.md", func(w io.Writer) error { return WriteTables(w, servers, trials) })
}
