package drainload

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// Params are the figures a run was made with.
type Params struct {
	Servers       []Server `json:"servers"`
	Repeats       int      `json:"repeats"`
	Conns         int      `json:"conns"`
	Loops         int      `json:"loops"`
	HighWatermark int      `json:"high_watermark"`
	LowWatermark  int      `json:"low_watermark"`
	RequestSize   int      `json:"request_size"`
	ClientRcvBuf  int      `json:"client_rcvbuf"`
	ClientSndBuf  int      `json:"client_sndbuf"`
	ClientMSS     int      `json:"client_mss"`
	IdleWindow    string   `json:"idle_window"`
	Window        string   `json:"window"`
	Tail          int64    `json:"tail"`
	QuietCPU      float64  `json:"quiet_cpu_pct"`
	QuietTCPMiB   float64  `json:"quiet_tcp_mib"`
}

func paramsOf(c Config) Params {
	return Params{Servers: c.Servers, Repeats: c.Repeats, Conns: c.Conns, Loops: c.Loops, HighWatermark: c.HighWatermark,
		LowWatermark: c.LowWatermark, RequestSize: c.RequestSize, ClientRcvBuf: c.ClientRcvBuf, ClientSndBuf: c.ClientSndBuf,
		ClientMSS: c.ClientMSS, IdleWindow: c.IdleWindow.String(), Window: c.Window.String(), Tail: c.Tail,
		QuietCPU: c.QuietCPU, QuietTCPMiB: c.QuietTCPMiB}
}

// Meta says where and how a run was made; the command fills it in.
type Meta = harness.Meta

// Trial is one server measured once.
type Trial struct {
	Server   string `json:"server"`
	Repeat   int    `json:"repeat"`
	Position int    `json:"position"`
	// QuietWaitS is how long the trial waited for the machine to be quiet;
	// Retries how many times it ran again because other programs got busy.
	QuietWaitS float64 `json:"quiet_wait_s"`
	Retries    int     `json:"retries"`
	// IdleCPU is the server's on-CPU time with no connection, in percent of
	// one core; IdleRuns its threads' wake-ups per second.
	IdleCPU  float64 `json:"idle_cpu_pct"`
	IdleRuns float64 `json:"idle_runs_per_s"`
	// IdleOther and PausedOther are the rest of the machine's busy time in
	// the same windows, percent of one core: what else competed.
	IdleOther float64 `json:"idle_other_cpu_pct"`
	// Stalled connections stopped being read; Paused is the server's own
	// count of paused connections before the CPU window.
	Stalled int `json:"stalled"`
	Paused  int `json:"paused"`
	// PausedCPU and PausedRuns are the same with every connection paused.
	PausedCPU   float64 `json:"paused_cpu_pct"`
	PausedRuns  float64 `json:"paused_runs_per_s"`
	PausedOther float64 `json:"paused_other_cpu_pct"`
	// ResumeOther is the same during the resumptions, less this process.
	ResumeOther float64 `json:"resume_other_cpu_pct"`
	// KernelTCPMiB is the memory all TCP sockets of the machine held once
	// every connection was paused (/proc/net/sockstat).
	KernelTCPMiB float64 `json:"kernel_tcp_mib"`
	// Kernel counts, over the trial from the first connection, the kernel's
	// TCP memory pressure entries, receive-queue drops and retransmission
	// timeouts (machine-wide).
	Kernel kernelCounters `json:"kernel"`
	// Resumed connections came back whole; the figures are over them, in ms.
	Resumed       int     `json:"resumed"`
	ResumeP50     float64 `json:"resume_p50_ms"`
	ResumeP99     float64 `json:"resume_p99_ms"`
	AfterDrainP50 float64 `json:"after_drain_p50_ms"`
	AfterDrainP99 float64 `json:"after_drain_p99_ms"`
	// BacklogMiB is the median of the responses surely queued at the pause.
	BacklogMiB float64 `json:"backlog_mib"`
	Error      string  `json:"error,omitempty"`
	ServerLog  string  `json:"server_log,omitempty"`
}

// noisy reports whether other programs were busier than twice quiet in one
// of the trial's phases.
func (t *Trial) noisy(quiet float64) bool {
	return quiet > 0 && max(t.IdleOther, t.PausedOther, t.ResumeOther) > 2*quiet
}

// Summary is one server's trials over the repeats.
type Summary struct {
	Server        string         `json:"server"`
	Version       string         `json:"version"`
	Trials        int            `json:"trials"`
	Failed        int            `json:"failed"`
	IdleCPU       harness.Spread `json:"idle_cpu_pct"`
	PausedCPU     harness.Spread `json:"paused_cpu_pct"`
	IdleRuns      harness.Spread `json:"idle_runs_per_s"`
	PausedRuns    harness.Spread `json:"paused_runs_per_s"`
	ResumeP50     harness.Spread `json:"resume_p50_ms"`
	ResumeP99     harness.Spread `json:"resume_p99_ms"`
	AfterDrainP50 harness.Spread `json:"after_drain_p50_ms"`
	AfterDrainP99 harness.Spread `json:"after_drain_p99_ms"`
	BacklogMiB    harness.Spread `json:"backlog_mib"`
	PausedOther   harness.Spread `json:"paused_other_cpu_pct"`
}

// Result is a whole run.
type Result struct {
	Meta      Meta      `json:"meta"`
	Params    Params    `json:"params"`
	Trials    []Trial   `json:"trials"`
	Summaries []Summary `json:"summaries"`
	OK        bool      `json:"ok"`
	Failures  []string  `json:"failures,omitempty"`
}

func (r *Result) summarize(servers []Server) {
	r.Summaries = nil
	r.Failures = nil
	for _, s := range servers {
		mine := harness.Keep(r.Trials, func(t Trial) bool { return t.Server == s.Label })
		sum := Summary{Server: s.Label, Version: s.Version, Trials: len(mine)}
		for _, t := range mine {
			if t.Error != "" {
				sum.Failed++
				r.Failures = append(r.Failures, fmt.Sprintf("%s repeat %d: %s", t.Server, t.Repeat, t.Error))
			}
		}
		ok := harness.Keep(mine, func(t Trial) bool { return t.Error == "" })
		sum.IdleCPU = harness.SpreadOf(ok, func(t Trial) float64 { return t.IdleCPU })
		sum.PausedCPU = harness.SpreadOf(ok, func(t Trial) float64 { return t.PausedCPU })
		sum.IdleRuns = harness.SpreadOf(ok, func(t Trial) float64 { return t.IdleRuns })
		sum.PausedRuns = harness.SpreadOf(ok, func(t Trial) float64 { return t.PausedRuns })
		sum.ResumeP50 = harness.SpreadOf(ok, func(t Trial) float64 { return t.ResumeP50 })
		sum.ResumeP99 = harness.SpreadOf(ok, func(t Trial) float64 { return t.ResumeP99 })
		sum.AfterDrainP50 = harness.SpreadOf(ok, func(t Trial) float64 { return t.AfterDrainP50 })
		sum.AfterDrainP99 = harness.SpreadOf(ok, func(t Trial) float64 { return t.AfterDrainP99 })
		sum.BacklogMiB = harness.SpreadOf(ok, func(t Trial) float64 { return t.BacklogMiB })
		sum.PausedOther = harness.SpreadOf(ok, func(t Trial) float64 { return t.PausedOther })
		r.Summaries = append(r.Summaries, sum)
	}
	r.OK = len(r.Failures) == 0 && len(r.Trials) > 0
}

// WriteTable writes the summary as a Markdown table.
func WriteTable(w io.Writer, r *Result) error {
	if _, err := fmt.Fprintf(w, "%d connections paused; median [min–max] over %d repeats\n\n", r.Params.Conns, r.Params.Repeats); err != nil {
		return err
	}
	rows := make([][]string, 0, len(r.Summaries))
	for _, s := range r.Summaries {
		rows = append(rows, []string{s.Server, s.Version, s.IdleCPU.Format(2), s.PausedCPU.Format(2), s.IdleRuns.Format(0),
			s.PausedRuns.Format(0), s.ResumeP50.Format(3), s.ResumeP99.Format(3), s.AfterDrainP50.Format(3),
			s.AfterDrainP99.Format(3), s.BacklogMiB.Format(2), s.PausedOther.Format(1), fmt.Sprintf("%d of %d", s.Failed, s.Trials)})
	}
	return harness.MarkdownTable(w, []string{"server", "version", "CPU % of a core, idle", "CPU %, paused", "wake-ups/s, idle",
		"wake-ups/s, paused", "resume p50 ms", "resume p99 ms", "after drain p50 ms", "after drain p99 ms", "backlog MiB",
		"rest of machine CPU %, paused", "failed trials"}, "llrrrrrrrrrrr", rows)
}

// WriteTrials writes every trial as a Markdown table.
func WriteTrials(w io.Writer, r *Result) error {
	rows := make([][]string, 0, len(r.Trials))
	for _, t := range r.Trials {
		rows = append(rows, []string{strconv.Itoa(t.Repeat), strconv.Itoa(t.Position), t.Server, harness.Fixed(t.QuietWaitS, 0),
			harness.Fixed(t.IdleCPU, 2), strconv.Itoa(t.Paused), harness.Fixed(t.PausedCPU, 2),
			fmt.Sprintf("%.0f / %.0f", t.IdleRuns, t.PausedRuns), fmt.Sprintf("%.1f / %.1f / %.1f", t.IdleOther, t.PausedOther, t.ResumeOther),
			strconv.Itoa(t.Retries), harness.Fixed(t.KernelTCPMiB, 0),
			fmt.Sprintf("%d / %d / %d", t.Kernel.MemoryPressures, t.Kernel.RcvQDrop, t.Kernel.Timeouts), strconv.Itoa(t.Resumed),
			fmt.Sprintf("%.3f / %.3f", t.ResumeP50, t.ResumeP99), fmt.Sprintf("%.3f / %.3f", t.AfterDrainP50, t.AfterDrainP99),
			harness.Fixed(t.BacklogMiB, 2), strings.ReplaceAll(t.Error, "|", "/")})
	}
	return harness.MarkdownTable(w, []string{"repeat", "#", "server", "waited for quiet s", "idle CPU %", "paused", "paused CPU %",
		"wake-ups/s idle / paused", "rest of machine CPU % idle / paused / resuming", "retries", "kernel TCP MiB",
		"pressure / rcvq drops / RTOs", "resumed", "resume p50 / p99 ms", "after drain p50 / p99 ms", "backlog MiB", "error"},
		"rrlrrrrrrrrrrrrrl", rows)
}

// Definitions says what the columns mean.
const Definitions = `- **CPU % of a core**: the server process's on-CPU time (sum of field 1 of
  /proc/PID/task/*/schedstat) over the sampling window, divided by the window. *Idle*: no
  connection. *Paused*: every connection paused and nothing moving (the client is blocked).
- **wake-ups/s**: how often the server's threads were switched onto a CPU (field 3 of the same
  files) per second of the window.
- **resume**: for each connection in turn, while the others stay paused, from the moment the
  client starts reading to the first of its reads after which the server's read count for that
  socket (NETLINK_SOCK_DIAG: bytes received less the receive queue) has moved: the server reads
  the connection again. It includes reading the backlog down to the low watermark.
- **after drain**: the same moment less the moment the client had read every response the server
  had written before it paused (from the server's read count at the stall, less one 64 KiB read
  it may hold unanswered). Negative: the server read again before the peer ran out of queued
  bytes.
- **backlog**: that lower bound, median over the connections.
- **waited for quiet**: before each trial the tool waits until the rest of the machine is busy
  under the quiet CPU figure and all TCP sockets hold under the quiet memory figure (see above).
- **rest of machine CPU**: the machine's process time (/proc/stat user, nice and system; not
  interrupts, where loopback packet processing lands) less the server's in the same
  window: the client is blocked then, so this is whatever else ran (while resuming, this process
  is subtracted too). A trial during which it passed twice the quiet figure runs again (retries). **kernel TCP MiB**: memory of
  all TCP sockets once every connection was paused (/proc/net/sockstat). **pressure / rcvq drops /
  RTOs**: machine-wide TcpExt counters over the trial (TCPMemoryPressures, TCPRcvQDrop,
  TCPTimeouts); under TCP memory pressure Linux drops segments and backs off, which shows in the
  resume figures of both builds.
- Every response byte is checked against the request stream (sequence number in each request);
  a lost, changed or reordered byte, a connection that did not stall or resume, or a dead server
  fails the trial and the tool exits non-zero.
- Figures are median [min–max] over the repeats; each trial starts a fresh server and the order
  of the servers rotates by one each repeat.
`

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Result) error { return harness.WriteJSON(w, r) }

// WriteReport writes DATE-drain-cost[-LABEL].md and .json into dir and
// returns the Markdown file's path.
func WriteReport(dir, label string, r *Result) (string, error) {
	var b strings.Builder
	b.WriteString("# Drain detection: CPU of paused connections and resume latency\n\n")
	harness.WriteVerdict(&b, r.OK, "PASS: every connection stalled, was counted paused by the server, resumed and returned every byte in order.")
	r.Meta.WriteHeader(&b, " (tool)", "")
	for _, s := range r.Params.Servers {
		fmt.Fprintf(&b, "- server %s: `%s` (%s)\n", s.Label, s.Binary, s.Version)
	}
	p := r.Params
	fmt.Fprintf(&b, "- %d connections, %d loops, watermarks %d / %d bytes, requests of %d bytes, client SO_RCVBUF %d SO_SNDBUF %d (0: autotuned) TCP_MAXSEG %d, idle window %s, paused window %s, tail %d bytes, %d repeats; each trial first waited for the rest of the machine to be busy under %.0f%% of a core with TCP sockets under %.0f MiB\n\n",
		p.Conns, p.Loops, p.HighWatermark, p.LowWatermark, p.RequestSize, p.ClientRcvBuf, p.ClientSndBuf, p.ClientMSS, p.IdleWindow, p.Window, p.Tail, p.Repeats, p.QuietCPU, p.QuietTCPMiB)
	if err := harness.WriteTables(&b, r, WriteTable, WriteTrials); err != nil {
		return "", err
	}
	harness.WriteFailures(&b, r.Failures)
	b.WriteString("\n## What the columns mean\n\n")
	b.WriteString(Definitions)
	return harness.Write(dir, harness.Name(r.Meta.Date, "drain-cost", label), b.String(), r)
}
