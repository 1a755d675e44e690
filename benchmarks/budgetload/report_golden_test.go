package budgetload

import (
	"io"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/golden"
)

// goldenTrials are two budgets of two trials each, one trial of which lost
// sessions.
func goldenTrials() []Trial {
	var ts [4]Trial
	for i := range ts {
		golden.Fill(&ts[i])
		ts[i].Budget = []int64{256 << 20, 1 << 30}[i%2]
		ts[i].PeakRSS = ts[i].Budget + int64(i)<<20
		ts[i].BaselineRSS = 100 << 20
		ts[i].Verified, ts[i].Sessions, ts[i].ErrorCount, ts[i].Err = 10, 10, 0, ""
	}
	ts[3].Verified, ts[3].ErrorCount, ts[3].Errors = 8, 2, []string{"session 3: sha mismatch", "session 9: reset"}
	ts[1].Paused = -1
	return ts[:]
}

func TestReportGolden(t *testing.T) {
	trials := goldenTrials()
	golden.Render(t, "table.md", func(w io.Writer) error { return WriteTable(w, trials) })
}
