package soak

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/tidegate/tidegate/benchmarks/fdlimit"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/players"
)

// Params is the run's configuration as the report states it.
type Params struct {
	Server        string               `json:"server"`
	DurationS     float64              `json:"duration_s"`
	IntervalS     float64              `json:"interval_s"`
	WarmupS       float64              `json:"warmup_s"`
	Sessions      int                  `json:"sessions"`
	Steady        int                  `json:"steady"`
	Churn         int                  `json:"churn"`
	Stalled       int                  `json:"stalled"`
	HalfClose     int                  `json:"half_close"`
	Rate          int                  `json:"rate"`
	StalledBurst  int                  `json:"stalled_burst"`
	HoldS         float64              `json:"hold_s"`
	ReloadEveryS  float64              `json:"reload_every_s"`
	RestartEveryS float64              `json:"restart_every_s"`
	UpgradeAtS    float64              `json:"upgrade_at_s"`
	Loops         int                  `json:"loops"`
	Tolerances    map[string]Tolerance `json:"tolerances"`
}

func paramsOf(c Config) Params {
	return Params{Server: c.Server, DurationS: c.Duration.Seconds(), IntervalS: c.Interval.Seconds(), WarmupS: c.Warmup.Seconds(),
		Sessions: c.Sessions, Steady: c.steady(), Churn: c.Churn, Stalled: c.Stalled, HalfClose: c.HalfClose, Rate: c.Rate, StalledBurst: c.StalledBurst,
		HoldS: c.Hold.Seconds(), ReloadEveryS: c.ReloadEvery.Seconds(), RestartEveryS: c.RestartEvery.Seconds(),
		UpgradeAtS: c.UpgradeAt.Seconds(), Loops: c.Loops, Tolerances: c.Tolerances}
}

// Meta is where and how the run was made, with the proxy binary's version.
type Meta = harness.BinaryMeta

// Event is a reload, a backend restart or the live upgrade: when it began
// (s since the start) and how long until it took effect.
type Event struct {
	At     float64 `json:"t_s"`
	Kind   string  `json:"kind"`
	TookMs float64 `json:"took_ms"`
	Note   string  `json:"note,omitempty"`
}

// Steady is what the steady players did over the whole run.
type Steady struct {
	Sessions int `json:"sessions"`
	// Frames sent and replies received over the run; Wrong counts the
	// replies lost, duplicated, corrupted or never answered, Samples holds
	// some of their messages.
	Frames  int64    `json:"frames_sent"`
	Replies int64    `json:"replies"`
	Wrong   int64    `json:"wrong"`
	Samples []string `json:"samples,omitempty"`
	// The round trips of the frames, in ms.
	RTTP50Ms float64 `json:"rtt_p50_ms"`
	RTTP99Ms float64 `json:"rtt_p99_ms"`
	RTTMaxMs float64 `json:"rtt_max_ms"`
}

func steadyOf(p players.Params, m players.Measurement) Steady {
	s := Steady{Sessions: p.Sessions, Frames: m.Sent, Replies: m.Received, Wrong: m.Errors(), Samples: m.Samples}
	if m.Hist != nil && m.Hist.TotalCount() > 0 {
		s.RTTP50Ms = float64(m.Hist.ValueAtQuantile(50)) / 1e6
		s.RTTP99Ms = float64(m.Hist.ValueAtQuantile(99)) / 1e6
		s.RTTMaxMs = float64(m.Hist.Max()) / 1e6
	}
	return s
}

// Result is a soak run.
type Result struct {
	Meta          Meta                 `json:"meta"`
	Params        Params               `json:"params"`
	FDLimit       fdlimit.Limit        `json:"fd_limit"`
	Dir           string               `json:"dir,omitempty"`
	ProxyLog      string               `json:"proxy_log,omitempty"`
	NewPID        int                  `json:"new_pid,omitempty"`
	SegmentStarts []float64            `json:"segment_starts_s"`
	Steady        Steady               `json:"steady"`
	Short         map[string]KindCount `json:"short_lived"`
	ShortFailures []string             `json:"short_lived_failures,omitempty"`
	Events        []Event              `json:"events"`
	Samples       []Sample             `json:"samples"`
	Trends        []Trend              `json:"trends"`
	OK            bool                 `json:"ok"`
	Failures      []string             `json:"failures,omitempty"`
}

// summarize runs the slope tests and decides the verdict.
func (r *Result) summarize(c Config) {
	r.Trends = nil
	if len(r.SegmentStarts) == 0 {
		r.SegmentStarts = []float64{0}
	}
	warmup := c.Warmup.Seconds()
	for _, fig := range Figures {
		tested := false
		for seg, from := range r.SegmentStarts {
			var xs, ys []float64
			for _, s := range r.Samples {
				if s.Segment != seg || s.Error != "" || s.At < from+warmup || (fig == FigureLatency && s.Latencies == 0) {
					continue
				}
				xs, ys = append(xs, s.At), append(ys, s.value(fig))
			}
			t := TestTrend(fig, seg, xs, ys, c.Tolerances[fig])
			r.Trends = append(r.Trends, t)
			tested = tested || t.Skipped == ""
			if t.Rising {
				r.Failures = append(r.Failures, fmt.Sprintf("%s rose by %s over segment %d's %d samples after warm-up (allowed %s; t = %.1f)",
					fig, num(t.Growth), seg, t.Samples, num(t.Allowed), t.TStat))
			}
		}
		if !tested {
			r.Failures = append(r.Failures, fmt.Sprintf("%s: no segment had %d samples after warm-up to test", fig, MinTrendSamples))
		}
	}
	r.budgetFailures()
	if st := r.Steady; st.Wrong > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("steady players: %d replies lost, duplicated, corrupted or unanswered: %s", st.Wrong, strings.Join(st.Samples, "; ")))
	}
	for _, k := range shortKinds {
		if n := r.Short[k].Failed; n > 0 {
			r.Failures = append(r.Failures, fmt.Sprintf("%d %s sessions failed (a byte lost or wrong, or the proxy refused or dropped them)", n, k))
		}
	}
	r.OK = len(r.Failures) == 0
}

// budgetFailures fails the run when a process's descriptor budget paused
// its accepting or refused a metrics connection: the soak is sized so that
// its sessions fit (doc.go), so either says that more descriptors were in
// use than the sessions asked for, a leak or a late release. The counters
// are per process, so each segment's largest reading is its count.
func (r *Result) budgetFailures() {
	for seg := range r.SegmentStarts {
		var pauses, refused, peak float64
		for _, s := range r.Samples {
			if s.Segment == seg && s.Error == "" {
				pauses, refused, peak = max(pauses, s.AcceptPauses), max(refused, s.MetricsRefused), max(peak, s.FDAccounted)
			}
		}
		if pauses > 0 {
			r.Failures = append(r.Failures, fmt.Sprintf("segment %d: accepting paused %s times at the descriptor budget (%s; peak %s accounted of %d)",
				seg, num(pauses), acceptPausesMetric, num(peak), r.FDLimit.Soft))
		}
		if refused > 0 {
			r.Failures = append(r.Failures, fmt.Sprintf("segment %d: %s metrics connections refused for want of descriptors (%s; peak %s accounted of %d)",
				seg, num(refused), metricsRefusedMetric, num(peak), r.FDLimit.Soft))
		}
	}
}

// shortKinds lists the short-lived kinds in report order.
var shortKinds = []string{kindChurn, kindStalled, kindHalfClose}

// num writes a figure compactly: integers as such, others with 2 decimals.
func num(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return harness.Fixed(v, 2)
}

// mib writes bytes as MiB with one decimal.
func mib(v float64) string { return harness.Fixed(v/(1<<20), 1) }

// WriteTrends writes the slope tests' table.
func WriteTrends(w io.Writer, r *Result) error {
	rows := make([][]string, 0, len(r.Trends))
	for _, t := range r.Trends {
		verdict := "flat"
		switch {
		case t.Skipped != "":
			verdict = "not tested: " + t.Skipped
		case t.Rising:
			verdict = "RISING"
		}
		rows = append(rows, []string{t.Figure, strconv.Itoa(t.Segment), strconv.Itoa(t.Samples), num(t.Mean), num(t.SlopePerHour),
			num(t.Growth), num(t.Allowed), harness.Fixed(min(t.TStat, 999), 1), verdict})
	}
	return harness.MarkdownTable(w, []string{"figure", "segment", "samples", "mean", "slope /h", "growth", "allowed", "t", "verdict"}, "lrrrrrrrl", rows)
}

// WriteSessions writes what every kind of session did.
func WriteSessions(w io.Writer, r *Result) error {
	st := r.Steady
	steady := map[string]string{ServerServe: "steady clients", ServerPush: "steady subscribers"}[r.Params.Server]
	rows := [][]string{{cmp.Or(steady, "steady players"), strconv.Itoa(st.Sessions), fmt.Sprintf("%d frames, %d replies", st.Frames, st.Replies), "–",
		strconv.FormatInt(st.Wrong, 10), fmt.Sprintf("rtt p50 %s, p99 %s, max %s ms", harness.Fixed(st.RTTP50Ms, 2), harness.Fixed(st.RTTP99Ms, 2), harness.Fixed(st.RTTMaxMs, 1))}}
	per := map[string]int{kindChurn: r.Params.Churn, kindStalled: r.Params.Stalled, kindHalfClose: r.Params.HalfClose}
	for _, k := range shortKinds {
		c := r.Short[k]
		rows = append(rows, []string{k, strconv.Itoa(per[k]), strconv.FormatInt(c.Done, 10), strconv.FormatInt(c.Cut, 10), strconv.FormatInt(c.Failed, 10), ""})
	}
	return harness.MarkdownTable(w, []string{"kind", "at once", "done", "cut by a backend restart", "failed", "note"}, "lrrrrl", rows)
}

// WriteSamples writes every sample.
func WriteSamples(w io.Writer, r *Result) error {
	rows := make([][]string, 0, len(r.Samples))
	for _, s := range r.Samples {
		rows = append(rows, []string{harness.Fixed(s.At, 0), strconv.Itoa(s.Segment), strconv.Itoa(s.PID), mib(float64(s.RSSBytes)), mib(s.HeapLiveBytes),
			strconv.Itoa(s.FDs), num(s.FDAccounted), strconv.Itoa(s.Goroutines), strconv.Itoa(s.GnetWorkers), strconv.Itoa(s.Threads), harness.Fixed(s.QueuedBytes/1024, 0),
			strconv.FormatInt(s.Latencies, 10), harness.Fixed(s.LatencyP50Ms, 2), harness.Fixed(s.LatencyP99Ms, 2), harness.OrDash(s.Error)})
	}
	return harness.MarkdownTable(w, []string{"t s", "seg", "pid", "RSS MiB", "live heap MiB", "fds", "fds accounted", "goroutines", "gnet workers", "threads", "queued KiB",
		"latencies", "p50 ms", "p99 ms", "error"}, "rrrrrrrrrrrrrrl", rows)
}

// WriteEvents writes the reloads, restarts and the upgrade.
func WriteEvents(w io.Writer, r *Result) error {
	rows := make([][]string, 0, len(r.Events))
	for _, e := range r.Events {
		rows = append(rows, []string{harness.Fixed(e.At, 0), e.Kind, harness.Fixed(e.TookMs, 0), harness.OrDash(e.Note)})
	}
	return harness.MarkdownTable(w, []string{"t s", "event", "took ms", "note"}, "rlrl", rows)
}

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Result) error { return harness.WriteJSON(w, r) }

// Markdown returns the report.
func Markdown(r *Result) (string, error) {
	var b strings.Builder
	p := r.Params
	server := cmp.Or(p.Server, ServerProxy)
	fmt.Fprintf(&b, "# Soak: %d sessions of tidegate %s for %s\n\n", p.Sessions, server, harness.Fixed(p.DurationS/60, 1)+" min")
	harness.WriteVerdict(&b, r.OK, fmt.Sprintf("PASS: no sampled figure trended upward after warm-up and no byte was lost or wrong, across %s, %s and %s.",
		count(r.Events, "reload", "reloads"), count(r.Events, "backend restart", "backend restarts"), count(r.Events, "live upgrade", "live upgrades")))
	r.Meta.WriteHeader(&b, r.Meta.RevisionNote("server"), fmt.Sprintf("; descriptor limit %d soft / %d hard", r.FDLimit.Soft, r.FDLimit.Hard))
	load, events := serverDescription(p)
	fmt.Fprintf(&b, "- load: %s\n- events: %s\n", load, events)
	fmt.Fprintf(&b, "- sampled every %gs: RSS, descriptors and threads from /proc/PID, live heap, goroutines, gnet's worker pool (%s: one goroutine per registration in flight, kept 10 s after; %s is the goroutines without them), %s and the descriptor budget (%s, %s, %s) from /metrics, the churn sessions' login and echo latencies\n",
		p.IntervalS, gnetWorkersMetric, FigureGoroutines, queuedMetric, fdAccountedMetric, acceptPausesMetric, metricsRefusedMetric)
	per := serverFDs(server)
	fmt.Fprintf(&b, "- descriptors: %d sessions at once (a short-lived session connects again only after the server has ended its last one: SHUT_WR, then the end of the stream) "+
		"take %d each in the server, %d, against its limit of %d; peak accounted by its budget: %s\n", p.Sessions, per, per*p.Sessions, r.FDLimit.Soft, num(r.peakAccounted()))
	if r.Dir != "" {
		fmt.Fprintf(&b, "- proxy log and configuration: %s\n", r.Dir)
	}
	b.WriteString("\n## Slope test\n\n")
	fmt.Fprintf(&b, "Per figure and per segment (0: the first process; 1: the one the live upgrade started), over the samples from %gs after the segment's start: "+
		"a least-squares line against time. A figure is RISING, and the run fails, when the line grows over the samples' span by more than it allows "+
		"(the larger of an absolute amount and a fraction of the figure's mean) and its slope is at least %d standard errors above zero. "+
		"A segment with fewer than %d samples is not tested; a figure with no segment tested fails the run.\n\n", p.WarmupS, MinTStat, MinTrendSamples)
	tol := slices.Sorted(func(yield func(string) bool) {
		for k := range p.Tolerances {
			if !yield(k) {
				return
			}
		}
	})
	trows := make([][]string, 0, len(tol))
	for _, k := range tol {
		t := p.Tolerances[k]
		abs := num(t.Abs)
		if strings.HasSuffix(k, "_bytes") {
			abs = mib(t.Abs) + " MiB"
		}
		trows = append(trows, []string{k, abs, harness.Fixed(100*t.Rel, 0) + "%"})
	}
	if err := harness.MarkdownTable(&b, []string{"figure", "absolute", "of the mean"}, "lrr", trows); err != nil {
		return "", err
	}
	for _, sec := range []struct {
		title string
		write func(io.Writer, *Result) error
	}{{"Trends", WriteTrends}, {"Sessions", WriteSessions}, {"Events", WriteEvents}, {"Samples", WriteSamples}} {
		fmt.Fprintf(&b, "\n## %s\n\n", sec.title)
		if err := sec.write(&b, r); err != nil {
			return "", err
		}
	}
	if len(r.ShortFailures) > 0 {
		b.WriteString("\n## Short-lived session failures (the first ones)\n\n")
		for _, f := range r.ShortFailures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	harness.WriteFailures(&b, r.Failures)
	return b.String(), nil
}

// peakAccounted is the largest tidegate_fd_accounted sampled.
func (r *Result) peakAccounted() float64 {
	peak := 0.0
	for _, s := range r.Samples {
		peak = max(peak, s.FDAccounted)
	}
	return peak
}

// count says how many events of kind there were: "1 reload", "3 reloads".
func count(events []Event, kind, plural string) string {
	n := 0
	for _, e := range events {
		if e.Kind == kind {
			n++
		}
	}
	if n == 1 {
		return "1 " + kind
	}
	return strconv.Itoa(n) + " " + plural
}

// WriteReport writes DATE-soak[-LABEL].md and its JSON into dir and
// returns the Markdown file's path.
func WriteReport(dir, label string, r *Result) (string, error) {
	md, err := Markdown(r)
	if err != nil {
		return "", err
	}
	return harness.Write(dir, harness.Name(r.Meta.Date, "soak", label), md, r)
}
