package pushload

import (
	"io"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/golden"
)

// goldenTrials are two servers at two subscriber counts, two repeats each,
// one trial of which failed.
func goldenTrials() []Trial {
	var ts [8]Trial
	for i := range ts {
		golden.Fill(&ts[i])
		t := &ts[i]
		t.Server, t.Subscribers = []Server{Tidegate, NetHTTP}[i%2], []int{100, 1000}[i/4]
		t.Repeat, t.Position, t.Failure = (i/2)%2+1, i%2, ""
		t.Result.DeliveredPerSec += float64(10 * i)
	}
	ts[5].Failure = "3 events lost | 1 reordered"
	return ts[:]
}

func TestReportGolden(t *testing.T) {
	trials := goldenTrials()
	golden.Render(t, "trials.md", func(w io.Writer) error { return WriteTrials(w, trials) })
	sums := Summarize(trials, []int{100, 1000}, []Server{Tidegate, NetHTTP})
	golden.Render(t, "summary.md", func(w io.Writer) error { return WriteSummary(w, sums) })
}
