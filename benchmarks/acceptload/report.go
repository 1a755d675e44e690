package acceptload

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// Meta says where and how a comparison was made; the command fills it in.
type Meta struct {
	harness.Meta
	// The load's and the servers' settings, for the table's heading.
	Conns      int `json:"conns"`
	Parallel   int `json:"parallel"`
	Body       int `json:"body"`
	Warmup     int `json:"warmup"`
	Repeats    int `json:"repeats"`
	Loops      int `json:"loops"`
	GoMaxProcs int `json:"gomaxprocs,omitempty"`
}

// Report is what `tidegate-bench bench accept --json` prints.
type Report struct {
	Meta Meta `json:"meta"`
	*Comparison
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r Report) error { return harness.WriteJSON(w, r) }

func optional(v *float64, decimals int) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.*f", decimals, *v)
}

func ratioText(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

// WriteTable writes the trials, the summaries and the ratios as markdown.
func WriteTable(w io.Writer, r Report) error {
	var b strings.Builder
	m := r.Meta
	procs := "unchanged"
	if m.GoMaxProcs > 0 {
		procs = fmt.Sprint(m.GoMaxProcs)
	}
	fmt.Fprintf(&b, "accept: N=%d connections, P=%d workers, %d-byte bodies, warm-up %d, %d repeats, server --loops %d, GOMAXPROCS %s\n",
		m.Conns, m.Parallel, m.Body, m.Warmup, m.Repeats, m.Loops, procs)
	if m.Command != "" {
		fmt.Fprintf(&b, "command: %s\n", m.Command)
	}
	h := m.Host
	if h.OS != "" {
		fmt.Fprintf(&b, "host: %s/%s, %d CPUs (%s), kernel %s, %s; client revision %s\n",
			h.OS, h.Arch, h.NumCPU, h.CPU, h.Kernel, h.GoVersion, m.Revision)
	}
	for _, s := range r.Summaries {
		if s.Server.Binary != "" {
			fmt.Fprintf(&b, "server %s: %s (revision %s)\n", s.Server.Label, s.Server.Binary, harness.OrDash(s.Server.Revision))
		}
	}
	b.WriteString("\n")
	trials := make([][]string, 0, len(r.Trials))
	for _, t := range r.Trials {
		res := t.Result
		trials = append(trials, []string{strings.TrimPrefix(trialName(t), "repeat "), t.Server, harness.Fixed(res.ConnsPerSec, 0),
			optional(t.ServerCPUUsPerConn, 2), optional(t.ServerSlicesPerConn, 2), optional(t.ClientCPUUsPerConn, 2),
			optional(t.OtherCPUUsPerConn, 1), harness.Fixed(res.P50Us, 1), harness.Fixed(res.P99Us, 1), harness.Fixed(res.MaxUs, 1),
			strconv.Itoa(res.Errors), optional(t.SyscallsPerConn, 2), harness.OrDash(oneLine(t.Failure))})
	}
	if err := harness.MarkdownTable(&b, []string{"repeat", "server", "conns/s", "server CPU µs/conn", "server run slices/conn",
		"client CPU µs/conn", "other CPU µs/conn", "p50 µs", "p99 µs", "max µs", "errors", "syscalls/conn", "failure"},
		"rlrrrrrrrrrrl", trials); err != nil {
		return err
	}
	b.WriteString("\nmedian [min–max] over the repeats:\n\n")
	sums := make([][]string, 0, len(r.Summaries))
	for _, s := range r.Summaries {
		sums = append(sums, []string{s.Server.Label, strconv.Itoa(s.Trials), s.ConnsPerSec.Format(0), s.ServerCPUUsPerConn.Format(2),
			s.ServerSlicesPerConn.Format(2), s.ClientCPUUsPerConn.Format(2), s.OtherCPUUsPerConn.Format(1), s.P50Us.Format(1),
			s.P99Us.Format(1), s.SyscallsPerConn.Short(2)})
	}
	if err := harness.MarkdownTable(&b, []string{"server", "trials", "conns/s", "server CPU µs/conn", "server run slices/conn",
		"client CPU µs/conn", "other CPU µs/conn", "p50 µs", "p99 µs", "syscalls/conn"}, "lrrrrrrrrr", sums); err != nil {
		return err
	}
	for _, q := range r.Ratios {
		fmt.Fprintf(&b, "\nratio %s/%s (medians): conns/s %s, server CPU/conn %s, p50 %s, p99 %s, syscalls/conn %s\n",
			q.Server, q.Baseline, ratioText(q.ConnsPerSec), ratioText(q.ServerCPUUsPerConn),
			ratioText(q.P50Us), ratioText(q.P99Us), ratioText(q.SyscallsPerConn))
	}
	if len(r.Failures) > 0 {
		b.WriteString("\nFAILED:\n")
		for _, f := range r.Failures {
			fmt.Fprintf(&b, "- %s\n", oneLine(f))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// oneLine keeps a message on one table row.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "|", "/")
	return strings.Join(strings.Fields(s), " ")
}
