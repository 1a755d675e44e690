package soak

import (
	"io"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/golden"
)

// goldenResult is a fixed run that failed: one figure rising, one segment
// too short to test, a short-lived session that failed.
func goldenResult() *Result {
	var r Result
	golden.Fill(&r)
	r.Params.Tolerances = map[string]Tolerance{FigureFDs: {Abs: 64, Rel: 0.05}, FigureRSS: {Abs: 32 << 20, Rel: 0.1}}
	r.Short = map[string]KindCount{kindChurn: {Done: 120, Cut: 3}, kindStalled: {Done: 40, Failed: 1}, kindHalfClose: {Done: 50}}
	r.Events = []Event{{At: 15, Kind: "reload", TookMs: 12}, {At: 20, Kind: "backend restart", TookMs: 840}, {At: 30, Kind: "live upgrade", TookMs: 1500, Note: "pid 10 to 11"}}
	r.Samples[1].Segment, r.Samples[1].Error = 1, "status of pid 10: no such file"
	r.Trends = []Trend{
		{Figure: FigureFDs, Segment: 0, Samples: 6, Mean: 700.5, SlopePerHour: 144000, Growth: 1000, Allowed: 64, TStat: perfectTStat, Rising: true},
		{Figure: FigureFDs, Segment: 1, Samples: 3, Skipped: "3 samples, fewer than 4"},
		{Figure: FigureRSS, Segment: 0, Samples: 6, Mean: 30 << 20, SlopePerHour: 1 << 20, Growth: 1 << 16, Allowed: 32 << 20, TStat: 0.4},
	}
	r.OK = false
	r.Failures = []string{"fds rose by 1000 over segment 0's 6 samples after warm-up (allowed 64; t = 1000000000.0)", "1 stalled sessions failed"}
	return &r
}

func TestReportGolden(t *testing.T) {
	r := goldenResult()
	golden.Render(t, "trends.md", func(w io.Writer) error { return WriteTrends(w, r) })
	golden.Render(t, "result.json", func(w io.Writer) error { return WriteJSON(w, r) })
	path, err := WriteReport(t.TempDir(), "golden", r)
	golden.File(t, "report.md", path, err)
}

// TestReportPasses: a passing run's report says PASS with its events.
func TestReportPasses(t *testing.T) {
	r := goldenResult()
	r.OK, r.Failures, r.ShortFailures = true, nil, nil
	md, err := Markdown(r)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "report-pass.md", []byte(md))
}
