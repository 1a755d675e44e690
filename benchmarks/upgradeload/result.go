package upgradeload

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// Params are the figures a run was made with.
type Params struct {
	Executable      string  `json:"executable"`
	Sessions        int     `json:"sessions"`
	IntervalMs      float64 `json:"interval_ms"`
	Repeats         int     `json:"repeats"`
	WarmupS         float64 `json:"warmup_s"`
	BaselineS       float64 `json:"baseline_s"`
	SettleS         float64 `json:"settle_s"`
	Loops           int     `json:"loops"`
	Writers         int     `json:"writers"`
	ConnectParallel int     `json:"connect_parallel"`
	QuietWaitS      float64 `json:"quiet_wait_s"`
	QuietCPU        float64 `json:"quiet_cpu_pct"`
	NoisyRetries    int     `json:"noisy_retries"`
	// HealthPollDuringMs is how often /healthz was polled during the
	// upgrade; 0: only after the old process's exit.
	HealthPollDuringMs float64 `json:"health_poll_during_ms"`
	DrainTimeoutS      float64 `json:"drain_timeout_s"`
}

func paramsOf(c Config) Params {
	return Params{Executable: c.Executable, Sessions: c.Sessions, IntervalMs: harness.Ms(c.Interval), Repeats: c.Repeats,
		WarmupS: c.Warmup.Seconds(), BaselineS: c.Baseline.Seconds(), SettleS: c.Settle.Seconds(), Loops: c.Loops,
		Writers: c.Writers, ConnectParallel: c.ConnectParallel, QuietWaitS: c.QuietWait.Seconds(), QuietCPU: c.QuietCPU, NoisyRetries: c.NoisyRetries, HealthPollDuringMs: harness.Ms(c.HealthPollDuring), DrainTimeoutS: DrainTimeout.Seconds()}
}

// Meta says where and how a run was made, with the proxy binary's
// version; the command fills it in.
type Meta = harness.BinaryMeta

// Trial is one upgrade of a fresh proxy.
type Trial struct {
	Repeat int `json:"repeat"`
	// Attempt counts the runs of this repeat after noisy ones (0: the first).
	Attempt  int `json:"attempt"`
	Sessions int `json:"sessions"`
	OldPID   int `json:"old_pid"`
	NewPID   int `json:"new_pid"`
	// HandoverMs runs from SIGUSR2 until the old process exited.
	HandoverMs float64 `json:"handover_ms"`
	// NewHealthMs runs from SIGUSR2 until /healthz first named another pid
	// (0 unless /healthz was polled during the upgrade).
	NewHealthMs float64 `json:"new_health_ms"`
	OldExit     string  `json:"old_exit"`
	// LoggedHandover is the old process's "upgrade: sessions handed over"
	// line, LoggedTakeover the new one's "upgrade: took over ..." line.
	LoggedHandover *LoggedFigure `json:"logged_handover,omitempty"`
	LoggedTakeover *LoggedFigure `json:"logged_takeover,omitempty"`
	// Baseline and Upgrade are the windows' longest echo gaps.
	Baseline GapStats `json:"baseline"`
	Upgrade  GapStats `json:"upgrade"`
	// Kept counts the sessions that got every echo, in order and unchanged,
	// and were served after the old process exited.
	Kept   int   `json:"kept"`
	Echoes int64 `json:"echoes"`
	// NewSession: a session opened after the upgrade was served.
	NewSession bool   `json:"new_session"`
	NewExit    string `json:"new_exit"`
	// BaselineCPU and UpgradeCPU are where the CPU went in the two windows.
	BaselineCPU CPUWindow `json:"baseline_cpu"`
	UpgradeCPU  CPUWindow `json:"upgrade_cpu"`
	// Noisy says why the trial is not counted: the rest of the machine was
	// busier than twice the quiet figure in a window (it ran again).
	Noisy string `json:"noisy,omitempty"`
	// QuietWaitS is how long the trial waited for a quiet machine, and
	// QuietBusyPct the machine's busy time in percent of one core then.
	QuietWaitS   float64 `json:"quiet_wait_s"`
	QuietBusyPct float64 `json:"quiet_busy_pct"`
	// ProxyLog is the log both proxy processes wrote; LogLines its upgrade
	// lines, warnings and errors.
	ProxyLog string   `json:"proxy_log"`
	LogLines []string `json:"log_lines,omitempty"`
	// SessionFailures counts the sessions that failed; Failures lists the
	// trial's failures and the first sessions'.
	SessionFailures int      `json:"session_failures"`
	Failures        []string `json:"failures,omitempty"`
}

// OK reports whether nothing failed in the trial.
func (t *Trial) OK() bool { return len(t.Failures) == 0 }

// Summary is the trials without a failure, over the repeats.
type Summary struct {
	Sessions         int            `json:"sessions"`
	Trials           int            `json:"trials"`
	Failed           int            `json:"failed"`
	HandoverMs       harness.Spread `json:"handover_ms"`
	LoggedHandoverMs harness.Spread `json:"logged_handover_ms"`
	LoggedTakeoverMs harness.Spread `json:"logged_takeover_ms"`
	NewHealthMs      harness.Spread `json:"new_health_ms"`
	UpgradeMaxMs     harness.Spread `json:"upgrade_gap_max_ms"`
	UpgradeP99Ms     harness.Spread `json:"upgrade_gap_p99_ms"`
	UpgradeMedianMs  harness.Spread `json:"upgrade_gap_median_ms"`
	BaselineMaxMs    harness.Spread `json:"baseline_gap_max_ms"`
	BaselineP99Ms    harness.Spread `json:"baseline_gap_p99_ms"`
	BaselineMedianMs harness.Spread `json:"baseline_gap_median_ms"`
	UpgradeLagMs     harness.Spread `json:"upgrade_send_lag_ms"`
	BaselineLagMs    harness.Spread `json:"baseline_send_lag_ms"`
	// Kept is over every trial, failed ones included: a lost session is
	// what the figure is for.
	Kept            harness.Spread `json:"kept"`
	SessionFailures int            `json:"session_failures"`
	// Noisy counts the trials in the figures during which other programs
	// were busy (after every retry); Retried the trials that ran again.
	Noisy   int `json:"noisy"`
	Retried int `json:"retried"`
}

// Result is a whole run.
type Result struct {
	Meta    Meta    `json:"meta"`
	Params  Params  `json:"params"`
	FDLimit FDLimit `json:"fd_limit"`
	// Dir holds each trial's configuration and proxy log.
	Dir    string  `json:"dir"`
	Trials []Trial `json:"trials"`
	// Noisy are the trials that ran again because other programs were busy.
	Noisy       []Trial  `json:"noisy,omitempty"`
	Summary     Summary  `json:"summary"`
	OK          bool     `json:"ok"`
	Failures    []string `json:"failures,omitempty"`
	Interrupted string   `json:"interrupted,omitempty"`
}

func (r *Result) summarize() {
	s := Summary{Sessions: r.Params.Sessions, Trials: len(r.Trials)}
	r.Failures = nil
	s.Retried = len(r.Noisy)
	for _, t := range r.Trials {
		if t.Noisy != "" {
			s.Noisy++
		}
		s.SessionFailures += t.SessionFailures
		if !t.OK() {
			s.Failed++
			for _, f := range t.Failures {
				r.Failures = append(r.Failures, fmt.Sprintf("repeat %d: %s", t.Repeat, f))
			}
		}
	}
	// Kept is over every trial: a lost session is what the figure is for.
	s.Kept = harness.SpreadOf(r.Trials, func(t Trial) float64 { return float64(t.Kept) })
	ok := harness.Keep(r.Trials, func(t Trial) bool { return t.OK() })
	s.HandoverMs = harness.SpreadOf(ok, func(t Trial) float64 { return t.HandoverMs })
	s.NewHealthMs = harness.SpreadOf(ok, func(t Trial) float64 { return t.NewHealthMs })
	s.LoggedHandoverMs = harness.SpreadOf(harness.Keep(ok, func(t Trial) bool { return t.LoggedHandover != nil && t.LoggedHandover.TookMs >= 0 }),
		func(t Trial) float64 { return t.LoggedHandover.TookMs })
	s.LoggedTakeoverMs = harness.SpreadOf(harness.Keep(ok, func(t Trial) bool { return t.LoggedTakeover != nil && t.LoggedTakeover.TookMs >= 0 }),
		func(t Trial) float64 { return t.LoggedTakeover.TookMs })
	s.UpgradeMaxMs = harness.SpreadOf(ok, func(t Trial) float64 { return t.Upgrade.MaxMs })
	s.UpgradeP99Ms = harness.SpreadOf(ok, func(t Trial) float64 { return t.Upgrade.P99Ms })
	s.UpgradeMedianMs = harness.SpreadOf(ok, func(t Trial) float64 { return t.Upgrade.MedianMs })
	s.BaselineMaxMs = harness.SpreadOf(ok, func(t Trial) float64 { return t.Baseline.MaxMs })
	s.BaselineP99Ms = harness.SpreadOf(ok, func(t Trial) float64 { return t.Baseline.P99Ms })
	s.BaselineMedianMs = harness.SpreadOf(ok, func(t Trial) float64 { return t.Baseline.MedianMs })
	s.UpgradeLagMs = harness.SpreadOf(ok, func(t Trial) float64 { return t.Upgrade.SendLagMs })
	s.BaselineLagMs = harness.SpreadOf(ok, func(t Trial) float64 { return t.Baseline.SendLagMs })
	r.Summary = s
	if r.Interrupted != "" {
		r.Failures = append(r.Failures, "interrupted: "+r.Interrupted)
	}
	r.OK = len(r.Failures) == 0 && len(r.Trials) > 0
}

// WriteTable writes the summary as a Markdown table.
func WriteTable(w io.Writer, r *Result) error {
	s := r.Summary
	if _, err := fmt.Fprintf(w, "live upgrade under load: %d sessions, a message every %g ms each; median [min–max] over %d of %d trials without a failure (ms)\n\n",
		s.Sessions, r.Params.IntervalMs, s.Trials-s.Failed, s.Trials); err != nil {
		return err
	}
	return harness.MarkdownTable(w, []string{"sessions", "hand-over (signal → old exit)", "old's own hand-over (log)",
		"longest gap, upgrade: max / p99 / median", "longest gap, baseline: max / p99 / median", "sessions kept", "failures"},
		"rrrrrrr", [][]string{{strconv.Itoa(s.Sessions), s.HandoverMs.Short(0), s.LoggedHandoverMs.Short(0),
			s.UpgradeMaxMs.Short(0) + " / " + s.UpgradeP99Ms.Short(0) + " / " + s.UpgradeMedianMs.Short(0),
			s.BaselineMaxMs.Short(0) + " / " + s.BaselineP99Ms.Short(0) + " / " + s.BaselineMedianMs.Short(0),
			s.Kept.Short(0) + " of " + strconv.Itoa(s.Sessions), failureCell(r)}})
}

// failureCell says how many trials and sessions failed.
func failureCell(r *Result) string {
	s := r.Summary
	if s.Failed == 0 && r.OK {
		return "0"
	}
	return fmt.Sprintf("%d of %d trials (%d sessions)", s.Failed, s.Trials, s.SessionFailures)
}

// WriteTrials writes every trial as a Markdown table.
func WriteTrials(w io.Writer, r *Result) error { return writeTrials(w, r.Trials) }

func writeTrials(w io.Writer, trials []Trial) error {
	logged := func(f *LoggedFigure) string {
		if f == nil {
			return "–"
		}
		return fmt.Sprintf("%.0f (%d)", f.TookMs, f.Sessions)
	}
	gaps := func(g GapStats) string {
		return fmt.Sprintf("%.0f / %.0f / %.0f (%.1f)", g.MaxMs, g.P99Ms, g.MedianMs, g.WindowS)
	}
	rows := make([][]string, 0, len(trials))
	for _, t := range trials {
		failures := t.Failures
		if t.Noisy != "" {
			failures = append([]string{"noisy: " + t.Noisy}, failures...)
		}
		repeat := strconv.Itoa(t.Repeat)
		if t.Attempt > 0 {
			repeat += fmt.Sprintf(" (again %d)", t.Attempt)
		}
		rows = append(rows, []string{repeat, fmt.Sprintf("%d → %d", t.OldPID, t.NewPID), harness.Fixed(t.HandoverMs, 0),
			logged(t.LoggedHandover), logged(t.LoggedTakeover), harness.Fixed(t.NewHealthMs, 0), gaps(t.Upgrade), gaps(t.Baseline),
			fmt.Sprintf("%.1f / %.1f", t.Baseline.SendLagMs, t.Upgrade.SendLagMs), strconv.Itoa(t.Kept),
			strconv.FormatInt(t.Echoes, 10), harness.YesNo(t.NewSession), harness.OrDash(t.NewExit), cpuCell(t.BaselineCPU),
			cpuCell(t.UpgradeCPU), harness.Fixed(t.QuietWaitS, 0), cell(strings.Join(failures, "; "))})
	}
	return harness.MarkdownTable(w, []string{"repeat", "old → new pid", "hand-over ms", "logged hand-over ms (sessions)",
		"logged take-over ms (sessions)", "new /healthz ms", "upgrade gap max / p99 / median ms (window s)",
		"baseline gap max / p99 / median ms (window s)", "send lag ms baseline / upgrade", "kept", "echoes", "new session",
		"new process after SIGTERM", "CPU % tool / proxy / rest, baseline", "CPU % tool / proxy / rest, upgrade",
		"waited for quiet s", "failures"}, "rlrrrrrrrrrllrrrl", rows)
}

// cpuCell writes a window's tool / proxy / rest CPU.
func cpuCell(w CPUWindow) string {
	if w.ToolPct < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f", w.ToolPct, w.ProxyPct, w.OtherPct)
}

// cell makes s fit in a Markdown table cell.
func cell(s string) string { return harness.Cell(s, 500) }

// Definitions says what the figures mean.
const Definitions = `- **hand-over**: from just before SIGUSR2 is sent to the proxy until the old process has exited
  (it is this tool's child; its exit is seen when it is reaped). It includes starting the new
  process, its readiness, moving every session, the old process's drain of what is left (none)
  and its stop.
- **old's own hand-over (log)**: the ` + "`took`" + ` field of the old process's log line
  "upgrade: sessions handed over": from the new process being ready to the last session sent.
  **logged take-over**: the new process's "upgrade: took over the old process's sessions" line.
- **new /healthz**: with --health-poll-during, from the signal until GET /healthz on the metrics
  address (polled that often) first named a pid other than the old process's (the new process
  serves the inherited metrics listener as soon as it starts; both may answer until the old one
  stops its metrics server). By default /healthz is polled only once the old process has exited,
  so that no connection reaches a listener while it is being handed over.
- **longest gap**: for every session, the longest time between two consecutive good echoes whose
  second one arrived in the window (for a session still waiting when the window closed, the time
  since its last echo, if longer). Nothing is subtracted: a session that was never held shows
  about one interval. **max / p99 / median** are over the sessions (nearest rank). The
  **upgrade** window runs from the signal until the old process's exit plus the settle time; the
  **baseline** window is as long as --baseline and ends at the signal, after the warm-up.
- **send lag**: how late this tool's latest send of a slot was against its schedule, the worst in
  the window. A lag near the gaps would mean that the tool, not the proxy, made them.
- **sessions kept**: sessions that got every echo of every message they sent, in order and
  unchanged, and at least one echo after the old process exited. Every other session is a failure:
  a lost, duplicated, reordered or corrupted echo, a session that ended or errored, echoes still
  missing an echo timeout (--echo-timeout, 15 s by default) after the last send.
- **new session**: after the upgrade window, a new connection through the proxy's address was
  served by the new process (three messages echoed, checked).
- **new process after SIGTERM**: once the sessions are closed the new process gets SIGTERM and must
  be gone within the drain timeout + 20 s. This tool is a child subreaper (Linux), so the new
  process, orphaned when the old one exits, becomes its child and its exit status is read.
- **CPU**: in each window, this tool's CPU (getrusage), the proxy's (schedstat of the live process;
  across the upgrade the old one's share comes from getrusage of reaped children, plus the new one's),
  and the rest of the machine's processes (/proc/stat user, nice and system time less the two;
  interrupts, where loopback packets are processed, left out), in percent of one core. Before each
  trial the tool waits (up to --quiet-wait) until the machine is busy under --quiet-cpu percent of
  one core over a second; a trial in which the rest of the machine used more than twice that in the
  baseline or the upgrade window runs again (up to --noisy-retries times) and is listed apart.
- Figures are median [min–max] over the trials without a failure; each trial starts a fresh proxy
  and echo backend. The tool exits non-zero when any trial failed.
`

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Result) error { return harness.WriteJSON(w, r) }

// WriteReport writes DATE-upgrade[-LABEL].md and .json into dir and returns
// the Markdown file's path.
func WriteReport(dir, label string, r *Result) (string, error) {
	var b strings.Builder
	b.WriteString("# Live upgrade under load: hand-over time and the longest echo gap of every session\n\n")
	harness.WriteVerdict(&b, r.OK, fmt.Sprintf("PASS: in every trial all %d sessions were kept, every echo arrived in order and unchanged, the new process served a new session and stopped on SIGTERM.", r.Params.Sessions))
	r.Meta.WriteHeader(&b, r.Meta.RevisionNote("proxy"), fmt.Sprintf("; descriptor limit (RLIMIT_NOFILE) %d soft / %d hard, after raising the soft one", r.FDLimit.Soft, r.FDLimit.Hard))
	p := r.Params
	fmt.Fprintf(&b, "- %d sessions, a 16-byte message every %g ms each; %d trials; warm-up %gs, baseline %gs, settle %gs; proxy: raw listener, %d loops, max_sessions 0, idle_timeout 0s, drain_timeout %gs, logs at info (JSON)\n",
		p.Sessions, p.IntervalMs, p.Repeats, p.WarmupS, p.BaselineS, p.SettleS, p.Loops, p.DrainTimeoutS)
	fmt.Fprintf(&b, "- proxy logs and configurations: %s (trial-N/)\n\n", r.Dir)
	b.WriteString("## Summary\n\n")
	if err := WriteTable(&b, r); err != nil {
		return "", err
	}
	s := r.Summary
	fmt.Fprintf(&b, "\nnew process answering /healthz after the signal: %s ms; send lag baseline %s ms, upgrade %s ms; the new process's logged take-over %s ms\n",
		s.NewHealthMs.Short(0), s.BaselineLagMs.Short(1), s.UpgradeLagMs.Short(1), s.LoggedTakeoverMs.Short(0))
	fmt.Fprintf(&b, "\ntrials that ran again because other programs were busy: %d; trials in the figures that were still noisy: %d\n", s.Retried, s.Noisy)
	b.WriteString("\n## Trials\n\n")
	if err := WriteTrials(&b, r); err != nil {
		return "", err
	}
	if len(r.Noisy) > 0 {
		b.WriteString("\n### Trials that ran again (other programs were busy)\n\n")
		if err := writeTrials(&b, r.Noisy); err != nil {
			return "", err
		}
	}
	b.WriteString("\n## What the figures mean\n\n")
	b.WriteString(Definitions)
	failures := make([]string, len(r.Failures))
	for i, f := range r.Failures {
		failures[i] = cell(f)
	}
	harness.WriteFailures(&b, failures)
	b.WriteString("\n## The proxy's log: upgrade lines, warnings and errors\n")
	for _, t := range r.Trials {
		fmt.Fprintf(&b, "\nrepeat %d (%s):\n\n```\n%s\n```\n", t.Repeat, t.ProxyLog, strings.Join(t.LogLines, "\n"))
	}
	return harness.Write(dir, harness.Name(r.Meta.Date, "upgrade", label), b.String(), r)
}
