package storm

import (
	"io"
	"testing"

	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/internal/testkit/golden"
)

// goldenResult is a fixed run of two targets, two repeats each: one trial
// ended by an error, one that lost held sessions, two that passed.
func goldenResult() *Result {
	var r Result
	golden.Fill(&r)
	r.Trials = append(r.Trials, r.Trials...)
	for i := range r.Trials {
		t := &r.Trials[i]
		t.Target = []string{"tidegate", "haproxy"}[i%2]
		t.Repeat, t.Position = i/2, i%2
		t.Error, t.ProxyLog, t.Alive, t.NewSession, t.Held.Lost = "", "", true, true, 0
		if t.Storm != nil {
			st := *t.Storm
			st.Errored = 0
			st.Count = st.Sum()
			t.Storm = &st
		}
	}
	r.Trials[0].Error, r.Trials[0].Storm, r.Trials[0].ProxyLog = "starting the proxy: exit status 1", nil, "ERR listen: address in use"
	r.Trials[3].Held.Lost, r.Trials[3].NewSession = 2, false
	r.summarize([]peers.Kind{"tidegate", "haproxy"})
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
