package session

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/golden"
)

// goldenResult is a fixed run of two targets over two repeats, a direct
// and a proxy phase each and a syscalls phase, one phase of which failed
// and one had wrong echoes; with players, the players workload's.
func goldenResult(players bool) *Result {
	var r Result
	golden.Fill(&r)
	if !players {
		r.Players, r.Goals = nil, nil
	}
	r.Targets = []string{"tidegate", "haproxy"}
	var phases []Phase
	for i := range 10 {
		p := r.Phases[i%2]
		p.Target, p.Repeat, p.Order = r.Targets[(i/5)%2], (i%5)/2, i
		p.Kind = []string{KindDirect, KindProxy, KindDirect, KindProxy, KindSyscalls}[i%5]
		p.Failure, p.Errors, p.ErrorSamples = "", 0, nil
		p.FramesPerSec += float64(100 * i)
		if !players {
			p.Players = nil
		}
		phases = append(phases, p)
	}
	phases[3].Failure = "proxy exited: status 2"
	phases[6].Errors, phases[6].ErrorSamples = 3, []string{"echo 7: wrong payload"}
	r.Phases = phases
	r.summarize()
	return &r
}

// terminatedResult is goldenResult's players run with the targets of
// issue #22: the transparent relay, tidegate online and Gate online, with
// the figures their goals compare (CPU/frame 800, 1,100 and 2,400 ns; RSS
// per session 10 and 50 KiB).
func terminatedResult() *Result {
	r := goldenResult(true)
	r.Targets = []string{"tidegate", "tidegate-online", "gate"}
	cpu := map[string]float64{"tidegate": 800, "tidegate-online": 1100, "gate": 2400}
	rss := map[string]float64{"tidegate": 6, "tidegate-online": 10, "gate": 50}
	var phases []Phase
	for i, p := range r.Phases[:6] {
		p.Target = r.Targets[i/2]
		p.Kind = []string{KindDirect, KindProxy}[i%2]
		p.Failure, p.Errors, p.ErrorSamples = "", 0, nil
		pl := *p.Players
		p.Players = &pl
		if p.Kind == KindProxy {
			c, k := cpu[p.Target], rss[p.Target]
			p.CPUNsPerFrame, p.Players.RSSPerSessionKiB = &c, &k
		}
		phases = append(phases, p)
	}
	r.Phases = phases
	r.summarize()
	return r
}

func TestReportGolden(t *testing.T) {
	for _, c := range []struct {
		name    string
		players bool
	}{{"echo", false}, {"players", true}, {"terminated", true}} {
		t.Run(c.name, func(t *testing.T) {
			r := goldenResult(c.players)
			if c.name == "terminated" {
				r = terminatedResult()
			}
			golden.Render(t, c.name+"-table.txt", func(w io.Writer) error { return WriteTable(w, r) })
			golden.Render(t, c.name+"-result.json", func(w io.Writer) error { return WriteJSON(w, r) })
			dir := t.TempDir()
			err := WriteReport(dir, r)
			golden.File(t, c.name+"-report.md", filepath.Join(dir, "report.md"), err)
			if _, err := os.Stat(filepath.Join(dir, "result.json")); err != nil {
				t.Errorf("WriteReport wrote no result.json: %v", err)
			}
		})
	}
}

// TestCompareGolden renders bench compare's side-by-side table of two
// platforms, each with both workloads of goldenResult.
func TestCompareGolden(t *testing.T) {
	platform := func(kernel string, idleRSS float64) *Platform {
		var p Platform
		golden.Fill(&p)
		p.Host.Kernel = kernel
		p.Session = map[string]*Result{"w16": goldenResult(false), "players": goldenResult(true)}
		p.Idle.RSSPerSession = idleRSS
		return &p
	}
	a, b := platform("6.1", 4), platform("24.0", 6)
	b.Session["w16"].Summary[0].CPUNsPerFrame.Median *= 2
	golden.Render(t, "compare.txt", func(w io.Writer) error { return Compare(w, a, b, "a.json", "b.json") })
}
