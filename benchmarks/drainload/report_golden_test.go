package drainload

import (
	"io"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/golden"
)

// goldenResult is a fixed run of two servers, two repeats each, one trial
// of which failed.
func goldenResult() *Result {
	var r Result
	golden.Fill(&r)
	r.Trials = append(r.Trials, r.Trials...)
	servers := []Server{{Label: "new", Version: "v2"}, {Label: "old", Version: "v1"}}
	for i := range r.Trials {
		t := &r.Trials[i]
		t.Server, t.Repeat, t.Position, t.Error, t.ServerLog = servers[i%2].Label, i/2, i%2, "", ""
		t.IdleCPU += float64(i)
	}
	r.Trials[2].Error = "connection 3 did not stall | after 5s"
	r.summarize(servers)
	return &r
}

func TestReportGolden(t *testing.T) {
	r := goldenResult()
	golden.Render(t, "table.md", func(w io.Writer) error { return WriteTable(w, r) })
	golden.Render(t, "trials.md", func(w io.Writer) error { return WriteTrials(w, r) })
	golden.Render(t, "result.json", func(w io.Writer) error { return WriteJSON(w, r) })
	path, err := WriteReport(t.TempDir(), "golden", r)
	golden.File(t, "report.md", path, err)
}
