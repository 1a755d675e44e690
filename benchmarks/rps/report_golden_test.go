package rps

import (
	"io"
	"testing"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/internal/testkit/golden"
)

// goldenMeasurements are two servers over two repeats, one run of which
// failed.
func goldenMeasurements() []Measurement {
	var ms [4]Measurement
	for i := range ms {
		golden.Fill(&ms[i])
		m := &ms[i]
		m.Server, m.Mode, m.Repeat, m.Position, m.Failure = []ServerKind{"tidegate", "goroutine"}[i%2], Child, i/2, i%2, ""
		m.Result.RPS += float64(100 * i)
	}
	ms[3].Failure = "2 requests timed out"
	ms[2].Mode = "inprocess"
	return ms[:]
}

func TestReportGolden(t *testing.T) {
	ms := goldenMeasurements()
	golden.Render(t, "measurements.txt", func(w io.Writer) error { return WriteMeasurements(w, ms) })
	sum := Summarize(ms, []ServerKind{"tidegate", "goroutine"})
	golden.Render(t, "summary.txt", func(w io.Writer) error { return WriteSummary(w, sum) })
	golden.Render(t, "table.txt", func(w io.Writer) error { return WriteTable(w, ms[0].Result, ms[1].Result) })
	var rep Report
	golden.Fill(&rep)
	rep.Measurements, rep.Summary = ms, &sum
	golden.Render(t, "report.json", func(w io.Writer) error { return harness.WriteJSON(w, rep) })
}
