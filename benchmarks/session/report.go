package session

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// WriteTable prints the summary: one row per target and phase kind, then
// the proxy's figures, then every phase that had errors or failed.
func WriteTable(w io.Writer, r *Result) error {
	fmt.Fprintf(w, "workload %s: %s, %d repeat(s), proxy cores %d", workloadName(r.Workload), r.workloadFlags(), r.Repeats, r.Setup.ProxyCores)
	if r.Setup.AppRTT != "" {
		fmt.Fprintf(w, ", app RTT %s", r.Setup.AppRTT)
	}
	fmt.Fprintln(w)
	if r.Players != nil {
		writePlayersTables(w, r)
	} else {
		writeEchoTables(w, r)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, p := range r.Phases {
		if p.Failure != "" {
			fmt.Fprintf(w, "FAILED %s %s repeat %d: %s\n", p.Target, p.Kind, p.Repeat+1, p.Failure)
		} else if p.Errors > 0 {
			fmt.Fprintf(w, "ERRORS %s %s repeat %d: %s, e.g. %s\n", p.Target, p.Kind, p.Repeat+1, p.errorCounts(),
				strings.Join(p.ErrorSamples, "; "))
		}
	}
	if !r.OK() {
		fmt.Fprintf(w, "\n*** RUN IS INVALID: %d %s, %d failed phases ***\n", r.Errors, r.ErrorsLabel(), r.Failed)
	}
	return nil
}

// workloadFlags formats the run's workload as the flags that select it.
func (r *Result) workloadFlags() string {
	if r.Players != nil {
		return r.Players.String()
	}
	return r.Params.String()
}

// ErrorsLabel names what a run's errors count: wrong echoes, or wrong or
// missing replies.
func (r *Result) ErrorsLabel() string {
	if r.Players != nil {
		return "wrong or missing replies"
	}
	return "wrong echoes"
}

// errorCounts says how many of a phase's echoes or replies were wrong, and how.
func (p Phase) errorCounts() string {
	if pl := p.Players; pl != nil {
		return fmt.Sprintf("%d wrong or missing replies (lost %d, duplicated %d, corrupted %d, unanswered %d)",
			p.Errors, pl.Lost, pl.Duplicated, pl.Corrupted, pl.Unanswered)
	}
	return fmt.Sprintf("%d wrong echoes", p.Errors)
}

// writeEchoTables prints the echo workloads' summary tables.
func writeEchoTables(w io.Writer, r *Result) {
	phases, proxy := echoRows(r, true)
	harness.TextTable{}.Write(w, []string{"target", "phase", "roundtrips/s", "frames/s", "MiB/s", "p50 ms", "p95 ms", "p99 ms", "errors"}, phases)
	fmt.Fprintln(w)
	harness.TextTable{}.Write(w, []string{"target", "proxy/direct", "CPU ns/frame", "syscalls/frame", "segments/frame (proxy)",
		"segments/frame (direct)", "RSS MiB"}, proxy)
}

// echoRows returns the rows of the echo workloads' summary tables, which
// the terminal and the report print alike: a line per target and kind of
// phase (with frames/s when frames is set: the report leaves it out) and a
// line per target of the proxy's figures.
func echoRows(r *Result, frames bool) (phases, proxy [][]string) {
	for _, s := range r.Summary {
		for _, row := range []struct {
			kind string
			ps   PhaseStats
		}{{KindDirect, s.Direct}, {KindProxy, s.Proxy}} {
			line := []string{s.Target, row.kind, row.ps.RoundtripsPerSec.Short(0)}
			if frames {
				line = append(line, row.ps.FramesPerSec.Short(0))
			}
			phases = append(phases, append(line, row.ps.MiBPerSec.Short(1), row.ps.P50Ms.Short(3), row.ps.P95Ms.Short(3),
				row.ps.P99Ms.Short(3), strconv.FormatInt(row.ps.Errors, 10)))
		}
		proxy = append(proxy, []string{s.Target, s.Ratio.Short(3), s.CPUNsPerFrame.Short(0), s.SyscallsPerFrame.Short(3),
			s.Proxy.SegmentsPerFrame.Short(3), s.Direct.SegmentsPerFrame.Short(3), s.RSSMiB.Short(1)})
	}
	return phases, proxy
}

// workloadName is the preset the run used, or "custom" for explicit flags.
func workloadName(w string) string {
	if w == "" {
		return "custom"
	}
	return w
}

// revisionOf names the revision of the tool that made the run; a binary
// without make build's stamp or a VCS stamp says so rather than guessing.
func revisionOf(h harness.Host) string {
	if h.Revision == "" {
		return "unknown (no revision stamp: build with make build)"
	}
	return h.Revision
}

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Result) error { return harness.WriteJSON(w, r) }

// MethodNotes explain how the figures were taken; the report prints them.
var MethodNotes = []string{
	"Each repeat runs a direct phase (client to backend) and a proxy phase (client to proxy to backend) per target; " +
		"direct goes first in odd-numbered repeats, proxy in even-numbered ones, and the target order rotates per repeat.",
	"Login (offline, protocol 5) and warmup are excluded from timing; every echo is checked for length, packet id, " +
		"connection, sequence and payload.",
	"A roundtrip relays two frames. CPU ns/frame is the proxy processes' on-CPU time (sum of /proc/PID/task/*/schedstat " +
		"field 1) over the measured interval divided by relayed frames.",
	"syscalls/frame counts every system call (perf stat -e raw_syscalls:sys_enter) of a fresh proxy started under perf, " +
		"in separate passes (as many as the repeats unless --syscall-passes says otherwise), reported as their median: " +
		"perf's tracepoint slows the process, so those passes give no other figure.",
	"A phase with a wrong echo or a failure is listed and counted, and none of its figures enters a median or a ratio.",
	"segments/frame is the TCP OutSegs delta of /proc/PID/net/snmp: on one host without namespaces it counts every " +
		"process (client, proxy and backend), not the proxy alone. With --rtt the proxy column counts the proxy's namespace only.",
	"On a small machine client, backend and proxy compete for cores: proxy/direct throughput ratios swing between " +
		"repeats and do not rank proxies; CPU per relayed frame is the figure to compare. Loopback numbers are not capacity claims.",
}

// WriteReport writes report.md, result.json and PNG charts into dir.
func WriteReport(dir string, r *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report directory %s: %w", dir, err)
	}
	f, err := os.Create(filepath.Join(dir, "result.json"))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	err = WriteJSON(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("report: result.json: %w", err)
	}
	charts, err := writeCharts(dir, r)
	if err != nil {
		return err
	}
	var b strings.Builder
	title := workloadName(r.Workload)
	fmt.Fprintf(&b, "# Session benchmark: %s\n\n", title)
	h := r.Setup.Host
	fmt.Fprintf(&b, "Host: %s/%s, kernel %s, %s (%d cores), poller %s, %s, revision %s.\n\n",
		h.OS, h.Arch, harness.OrDash(h.Kernel), harness.OrDash(h.CPU), h.NumCPU, h.Poller, h.GoVersion, revisionOf(h))
	fmt.Fprintf(&b, "Workload: `%s`, %d repeat(s). Targets: %s. Proxy cores: %d; backend loops: %d",
		r.workloadFlags(), r.Repeats, strings.Join(r.Targets, ", "), r.Setup.ProxyCores, r.Setup.BackendLoops)
	if r.Setup.GoMaxProcs > 0 {
		fmt.Fprintf(&b, "; goproxy GOMAXPROCS %d", r.Setup.GoMaxProcs)
	}
	if r.Setup.Namespaces {
		fmt.Fprintf(&b, "; client, proxy and backend in three network namespaces, RTT %s per link", harness.OrDash(r.Setup.RTT))
	} else {
		b.WriteString("; loopback")
	}
	if r.Setup.AppRTT != "" {
		fmt.Fprintf(&b, "; RTT %s emulated in user space (client and backend each hold every frame for half of it)", r.Setup.AppRTT)
	}
	b.WriteString(".\n\n")
	switch {
	case !r.OK():
		fmt.Fprintf(&b, "**INVALID RUN: %d %s, %d failed phases.** See the phase list below.\n\n", r.Errors, r.ErrorsLabel(), r.Failed)
	case r.Players != nil:
		fmt.Fprintf(&b, "All %d phases completed; every reply came, once, in order and correct (errors=0).\n\n", len(r.Phases))
	default:
		fmt.Fprintf(&b, "All %d phases completed; every echo was correct (errors=0).\n\n", len(r.Phases))
	}
	b.WriteString("Values are median [min–max] over phases.\n\n")
	if r.Players != nil {
		writePlayersMarkdown(&b, r)
	} else {
		writeEchoMarkdown(&b, r)
	}
	for _, c := range charts {
		fmt.Fprintf(&b, "![%s](%s)\n\n", c.title, c.file)
	}
	b.WriteString("## Method\n\n")
	notes := MethodNotes
	if r.Players != nil {
		notes = PlayersMethodNotes
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	b.WriteString("\n## Phases\n\n")
	opt := func(v *float64, decimals int) string {
		if v == nil {
			return "-"
		}
		return harness.Fixed(*v, decimals)
	}
	rows := make([][]string, 0, len(r.Phases))
	for _, p := range r.Phases {
		rows = append(rows, []string{strconv.Itoa(p.Order), p.Target, p.Kind, strconv.Itoa(p.Repeat + 1), harness.Fixed(p.RoundtripsPerSec, 0),
			harness.Fixed(p.P99Ms, 3), opt(p.CPUNsPerFrame, 0), opt(p.SyscallsPerFrame, 3), strconv.FormatInt(p.Errors, 10),
			strings.ReplaceAll(p.Failure, "|", "/")})
	}
	harness.MarkdownTable(&b, []string{"#", "Target", "Kind", "Repeat", "Roundtrips/s", "p99 ms", "CPU ns/frame", "Syscalls/frame", "Errors", "Failure"},
		"rllrrrrrrl", rows)
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// writeEchoMarkdown writes the echo workloads' summary tables.
func writeEchoMarkdown(b *strings.Builder, r *Result) {
	phases, proxy := echoRows(r, false)
	harness.MarkdownTable(b, []string{"Target", "Phase", "Roundtrips/s", "MiB/s", "p50 ms", "p95 ms", "p99 ms", "Errors"}, "llrrrrrr", phases)
	b.WriteString("\n")
	harness.MarkdownTable(b, []string{"Target", "Proxy/direct", "CPU ns/frame", "Syscalls/frame", "Segments/frame (proxy phase)",
		"Segments/frame (direct phase)", "RSS MiB"}, "lrrrrrr", proxy)
	b.WriteString("\n")
}

type chartFile struct{ title, file string }

// chartSpec is one chart: its file, title, y axis and bars.
type chartSpec struct {
	file, title, ylabel string
	series              []series
}

// series is one set of bars: a value per target.
type series struct {
	name  string
	stats []harness.Spread
}

// writeCharts draws bar charts of medians with min–max error bars.
func writeCharts(dir string, r *Result) ([]chartFile, error) {
	labels := r.Targets
	pick := func(f func(Summary) harness.Spread) []harness.Spread {
		out := make([]harness.Spread, len(r.Summary))
		for i, s := range r.Summary {
			out[i] = f(s)
		}
		return out
	}
	cpu := chartSpec{"cpu_ns_per_frame.png", "Proxy CPU per relayed frame", "ns/frame",
		[]series{{"proxy", pick(func(s Summary) harness.Spread { return s.CPUNsPerFrame })}}}
	p99 := chartSpec{"latency_p99.png", "p99 latency", "ms", []series{
		{"direct", pick(func(s Summary) harness.Spread { return s.Direct.P99Ms })},
		{"proxy", pick(func(s Summary) harness.Spread { return s.Proxy.P99Ms })}}}
	syscalls := chartSpec{"syscalls_per_frame.png", "Proxy system calls per relayed frame", "syscalls/frame",
		[]series{{"proxy", pick(func(s Summary) harness.Spread { return s.SyscallsPerFrame })}}}
	specs := []chartSpec{cpu,
		{"roundtrips.png", "Roundtrips per second", "roundtrips/s", []series{
			{"direct", pick(func(s Summary) harness.Spread { return s.Direct.RoundtripsPerSec })},
			{"proxy", pick(func(s Summary) harness.Spread { return s.Proxy.RoundtripsPerSec })}}},
		p99,
		{"ratio.png", "Proxy/direct frames per second (paired)", "ratio",
			[]series{{"proxy/direct", pick(func(s Summary) harness.Spread { return s.Ratio })}}},
		syscalls,
	}
	if r.Players != nil {
		players := func(f func(*PlayersSummary) harness.Spread) []harness.Spread {
			return pick(func(s Summary) harness.Spread {
				if s.Players == nil {
					return harness.Spread{}
				}
				return f(s.Players)
			})
		}
		specs = []chartSpec{cpu, p99,
			{"added_latency.png", "Latency added by the proxy (proxy less direct, paired)", "ms", []series{
				{"p50", players(func(s *PlayersSummary) harness.Spread { return s.AddedP50Ms })},
				{"p99", players(func(s *PlayersSummary) harness.Spread { return s.AddedP99Ms })},
				{"p99.9", players(func(s *PlayersSummary) harness.Spread { return s.AddedP999Ms })}}},
			{"rss_per_session.png", "Proxy RSS per session", "KiB",
				[]series{{"proxy", players(func(s *PlayersSummary) harness.Spread { return s.RSSPerSessionKiB })}}},
			syscalls,
		}
	}
	var out []chartFile
	for _, sp := range specs {
		any := false
		for _, s := range sp.series {
			for _, st := range s.stats {
				any = any || st.N > 0
			}
		}
		if !any {
			continue
		}
		if err := barChart(filepath.Join(dir, sp.file), sp.title, sp.ylabel, labels, sp.series); err != nil {
			return nil, fmt.Errorf("chart %s: %w", sp.file, err)
		}
		out = append(out, chartFile{sp.title, sp.file})
	}
	return out, nil
}

// rangeBars are min–max error bars around medians.
type rangeBars struct {
	xs    []float64
	stats []harness.Spread
}

func (e rangeBars) Len() int                    { return len(e.xs) }
func (e rangeBars) XY(i int) (float64, float64) { return e.xs[i], e.stats[i].Median }
func (e rangeBars) YError(i int) (float64, float64) {
	return e.stats[i].Median - e.stats[i].Min, e.stats[i].Max - e.stats[i].Median
}

var barColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

func barChart(path, title, ylabel string, labels []string, ss []series) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	w := vg.Points(18)
	for i, s := range ss {
		vals := make(plotter.Values, len(s.stats))
		xs := make([]float64, len(s.stats))
		for j, st := range s.stats {
			vals[j] = st.Median
			xs[j] = float64(j)
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.Color = barColors[i%len(barColors)]
		bars.LineStyle.Width = 0
		// Series sit side by side: shift in data units (one unit per target).
		shift := (float64(i) - float64(len(ss)-1)/2) * 0.25
		bars.XMin = shift
		p.Add(bars)
		if len(ss) > 1 {
			p.Legend.Add(s.name, bars)
		}
		eb := rangeBars{stats: make([]harness.Spread, len(s.stats))}
		for j, st := range s.stats {
			eb.xs = append(eb.xs, xs[j]+shift)
			if st.N == 0 {
				st = harness.Spread{}
			}
			eb.stats[j] = st
		}
		errBars, err := plotter.NewYErrorBars(eb)
		if err != nil {
			return err
		}
		p.Add(errBars)
	}
	p.Legend.Top = true
	p.Y.Max *= 1.15 // room for the legend above the tallest bar
	p.NominalX(labels...)
	width := vg.Length(max(4, 1.3*float64(len(labels)))) * vg.Inch
	return p.Save(width, 3.5*vg.Inch, path)
}
