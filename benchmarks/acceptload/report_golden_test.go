package acceptload

import (
	"io"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/golden"
)

// goldenReport is a fixed comparison of two servers over two repeats with
// a syscall trial each, one trial of which failed.
func goldenReport() Report {
	var r Report
	golden.Fill(&r)
	servers := []Server{{Label: "new", Binary: "/bin/new", Revision: "abc"}, {Label: "old"}}
	r.Trials = append(r.Trials, r.Trials...)
	r.Trials = append(r.Trials, r.Trials[:2]...)
	for i := range r.Trials {
		t := &r.Trials[i]
		t.Server, t.Repeat, t.Failure, t.Syscalls = servers[i%2].Label, i/2, "", i >= 4
		t.Result.ConnsPerSec += float64(100 * i)
	}
	r.Trials[3].Failure = "12 connections failed:\nreset | refused"
	r.Trials[1].ServerCPUUsPerConn = nil
	r.summarize(servers)
	return r
}

func TestReportGolden(t *testing.T) {
	r := goldenReport()
	golden.Render(t, "table.md", func(w io.Writer) error { return WriteTable(w, r) })
	golden.Render(t, "result.json", func(w io.Writer) error { return WriteJSON(w, r) })
}
