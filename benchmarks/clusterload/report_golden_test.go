package clusterload

import (
	"io"
	"testing"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/internal/testkit/golden"
)

// TestReportGolden renders two on/off pairs, one trial of which had failed
// logins, as bench cluster prints them.
func TestReportGolden(t *testing.T) {
	var r Result
	golden.Fill(&r)
	r.Trials = append(r.Trials, r.Trials...)
	for i := range r.Trials {
		r.Trials[i].Cluster, r.Trials[i].Failed, r.Trials[i].RejectedReason = i%2 == 0, 0, ""
		r.Trials[i].LoginsPerSec += float64(100 * i)
	}
	r.Trials[3].Failed, r.Trials[3].RejectedReason = 2, "(timeout x2)"
	r.On, r.Off = summarize(r.Trials, true), summarize(r.Trials, false)
	golden.Render(t, "table.md", func(w io.Writer) error { return WriteTable(w, &r) })
	golden.Render(t, "result.json", func(w io.Writer) error { return harness.WriteJSON(w, &r) })
}
