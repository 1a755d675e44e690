package upgradeload

import (
	"io"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/golden"
)

// goldenResult is a fixed run of four trials, one of which failed, and a
// noisy one that ran again.
func goldenResult() *Result {
	var r Result
	golden.Fill(&r)
	r.Trials = append(r.Trials, r.Trials...)
	for i := range r.Trials {
		t := &r.Trials[i]
		t.Repeat, t.Failures, t.Noisy = i, nil, ""
		t.HandoverMs += float64(i)
	}
	r.Trials[1].Failures = []string{"session 7 | lost an echo", "new process did not stop"}
	r.Trials[2].Noisy = "the rest of the machine used 80% of a core"
	r.Interrupted = ""
	r.summarize()
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
