package storm

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/peers"
)

// Params are the figures a run was made with.
type Params struct {
	Targets       []string `json:"targets"`
	Repeats       int      `json:"repeats"`
	Held          int      `json:"held"`
	Storm         int      `json:"storm"`
	Limit         int      `json:"limit"`
	NoFile        int      `json:"nofile"`
	ProxyCores    int      `json:"proxy_cores"`
	StormParallel int      `json:"storm_parallel"`
	StormTimeout  string   `json:"storm_timeout"`
	HeldInterval  string   `json:"held_interval"`
	EchoTimeout   string   `json:"echo_timeout"`
	AfterTimeout  string   `json:"after_timeout"`
	Sources       []string `json:"sources"`
}

func paramsOf(c Config) Params {
	p := Params{Repeats: c.Repeats, Held: c.Held, Storm: c.Storm, Limit: c.Limit, NoFile: c.NoFile, ProxyCores: c.ProxyCores,
		StormParallel: c.StormParallel, StormTimeout: c.StormTimeout.String(), HeldInterval: c.HeldInterval.String(),
		EchoTimeout: c.EchoTimeout.String(), AfterTimeout: c.AfterTimeout.String()}
	for _, k := range c.Targets {
		p.Targets = append(p.Targets, string(k))
	}
	for _, s := range c.Sources {
		p.Sources = append(p.Sources, s.String())
	}
	return p
}

// Meta says where and how a run was made; the command fills it in.
type Meta = harness.Meta

// Summary is one target's trials in figures over the repeats.
type Summary struct {
	Target string `json:"target"`
	Trials int    `json:"trials"`
	// Started counts the trials that got as far as firing the storm.
	Started    int            `json:"started"`
	HeldLost   harness.Spread `json:"held_lost"`
	Accepted   harness.Spread `json:"accepted"`
	Refused    harness.Spread `json:"refused"`
	TimedOut   harness.Spread `json:"timed_out"`
	Errored    harness.Spread `json:"errored"`
	AcceptP50  harness.Spread `json:"accept_p50_ms"`
	AcceptP99  harness.Spread `json:"accept_p99_ms"`
	CPUMs      harness.Spread `json:"cpu_ms"`
	Alive      int            `json:"alive"`
	NewSession int            `json:"new_session"`
	// OK: every trial of the target passed.
	OK bool `json:"ok"`
}

// Result is a whole run.
type Result struct {
	Meta    Meta      `json:"meta"`
	Params  Params    `json:"params"`
	Trials  []Trial   `json:"trials"`
	Summary []Summary `json:"summary"`
	// Failures lists every failed trial's failures; OK is true when there
	// are none.
	Failures []string `json:"failures,omitempty"`
	OK       bool     `json:"ok"`
}

// summarize fills in Summary, Failures and OK from the trials.
func (r *Result) summarize(targets []peers.Kind) {
	r.Summary, r.Failures = nil, nil
	for _, k := range targets {
		mine := harness.Keep(r.Trials, func(t Trial) bool { return t.Target == string(k) })
		if len(mine) == 0 {
			continue
		}
		s := Summary{Target: string(k), Trials: len(mine), OK: true}
		for _, t := range mine {
			if f := t.Failures(); len(f) > 0 {
				s.OK = false
				for _, m := range f {
					r.Failures = append(r.Failures, fmt.Sprintf("%s repeat %d: %s", t.Target, t.Repeat, m))
				}
			}
			if t.Alive {
				s.Alive++
			}
			if t.NewSession {
				s.NewSession++
			}
		}
		// Every trial that fired the storm counts, failed ones too: a lost
		// held session or a refused storm connection is what is measured.
		started := harness.Keep(mine, func(t Trial) bool { return t.Storm != nil })
		accepted := harness.Keep(started, func(t Trial) bool { return t.Storm.Accepted > 0 })
		s.Started = len(started)
		s.HeldLost = harness.SpreadOf(started, func(t Trial) float64 { return float64(t.Held.Lost) })
		s.Accepted = harness.SpreadOf(started, func(t Trial) float64 { return float64(t.Storm.Accepted) })
		s.Refused = harness.SpreadOf(started, func(t Trial) float64 { return float64(t.Storm.Refused) })
		s.TimedOut = harness.SpreadOf(started, func(t Trial) float64 { return float64(t.Storm.TimedOut) })
		s.Errored = harness.SpreadOf(started, func(t Trial) float64 { return float64(t.Storm.Errored) })
		s.AcceptP50 = harness.SpreadOf(accepted, func(t Trial) float64 { return t.Storm.AcceptP50Ms })
		s.AcceptP99 = harness.SpreadOf(accepted, func(t Trial) float64 { return t.Storm.AcceptP99Ms })
		s.CPUMs = harness.SpreadOf(harness.Keep(started, func(t Trial) bool { return t.CPUMeasured }), func(t Trial) float64 { return t.CPUMs })
		r.Summary = append(r.Summary, s)
	}
	r.OK = len(r.Failures) == 0 && len(r.Trials) > 0
	if len(r.Trials) == 0 {
		r.Failures = append(r.Failures, "no trial ran")
	}
}

// yesOf writes n of total as "yes (3/3)" when all, else "no (n/total)".
func yesOf(n, total int) string {
	if n == total && total > 0 {
		return fmt.Sprintf("yes (%d/%d)", n, total)
	}
	return fmt.Sprintf("**no** (%d/%d)", n, total)
}

// WriteTable writes the summary as a markdown table, one row per target,
// each figure as median [min–max] over the repeats, then the failures.
func WriteTable(w io.Writer, r *Result) error {
	nofile := "descriptor limit unchanged"
	if r.Params.NoFile > 0 {
		nofile = fmt.Sprintf("%d descriptors per proxy", r.Params.NoFile)
	}
	if _, err := fmt.Fprintf(w, "storm: %d held sessions, %d storm connections, limit %d sessions, %s, %d repeats\n\n",
		r.Params.Held, r.Params.Storm, r.Params.Limit, nofile, r.Params.Repeats); err != nil {
		return err
	}
	rows := make([][]string, 0, len(r.Summary))
	for _, s := range r.Summary {
		verdict := "ok"
		if !s.OK {
			verdict = "**FAIL**"
		}
		rows = append(rows, []string{s.Target, s.HeldLost.Format(0), s.Accepted.Format(0), s.Refused.Format(0),
			s.TimedOut.Format(0), s.Errored.Format(0), s.AcceptP50.Format(1), s.AcceptP99.Format(1),
			yesOf(s.Alive, s.Trials), yesOf(s.NewSession, s.Trials), s.CPUMs.Format(0), verdict})
	}
	if err := harness.MarkdownTable(w, []string{"target", "held lost", "storm accepted", "refused", "timed out", "errored",
		"accept p50 ms", "accept p99 ms", "proxy alive", "new session after", "proxy CPU ms", "verdict"}, "lrrrrrrrllrl", rows); err != nil {
		return err
	}
	if len(r.Failures) == 0 {
		return nil
	}
	_, err := io.WriteString(w, "\nFailures:\n- "+strings.Join(r.Failures, "\n- ")+"\n")
	return err
}

// WriteTrials writes one markdown row per trial with the reasons behind
// the refusals, time-outs and losses.
func WriteTrials(w io.Writer, r *Result) error {
	rows := make([][]string, 0, len(r.Trials))
	for i := range r.Trials {
		t := &r.Trials[i]
		head := []string{strconv.Itoa(t.Repeat), strconv.Itoa(t.Position), t.Target}
		if t.Storm == nil {
			rows = append(rows, append(head, "–", "–", "–", "–", "–", "–", "–", "–", "–",
				yesNo(t.Alive), yesNo(t.NewSession), "error: "+oneLine(t.Error)))
			continue
		}
		st := t.Storm
		cpu := "–"
		if t.CPUMeasured {
			cpu = harness.Fixed(t.CPUMs, 0)
		}
		reasons := reasonList(st.Reasons)
		if t.Held.Lost > 0 {
			reasons = strings.TrimPrefix(reasons+"; held: "+reasonList(t.Held.Reasons), "; ")
		}
		lat, conn := "–", "–"
		if st.Accepted > 0 {
			lat = fmt.Sprintf("%.1f / %.1f / %.1f", st.AcceptP50Ms, st.AcceptP99Ms, st.AcceptMaxMs)
			conn = harness.Fixed(st.ConnectP99Ms, 1)
		}
		rows = append(rows, append(head, fmt.Sprintf("%d (%d)", t.Held.Lost, t.Held.Echoes), strconv.Itoa(st.Accepted),
			strconv.Itoa(st.Refused), strconv.Itoa(st.TimedOut), strconv.Itoa(st.Errored), lat, conn,
			harness.Fixed(st.Seconds, 2), cpu, yesNo(t.Alive), yesNo(t.NewSession), reasons))
	}
	return harness.MarkdownTable(w, []string{"repeat", "#", "target", "held lost (echoes)", "accepted", "refused", "timed out",
		"errored", "accept p50 / p99 / max ms", "connect p99 ms", "storm s", "CPU ms", "alive", "new session", "reasons"},
		"rrlrrrrrrrrrlll", rows)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}

// oneLine keeps the first line of s, for a table cell.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.ReplaceAll(s, "|", "\\|")
}

// WriteJSON writes the result as indented JSON.
func WriteJSON(w io.Writer, r *Result) error { return harness.WriteJSON(w, r) }

// Definitions explains the columns, for the results file.
const Definitions = `- **held lost**: held sessions (opened and checked before the storm, each echoing a 64-byte
  message unique to its session and sequence every held-interval until after the new-session check,
  then once more) that failed an echo at any point: error, close, reset, wrong bytes, or no echo
  within echo-timeout. Must be 0.
- **storm accepted / refused / timed out / errored**: every storm connection has exactly one.
  Accepted: connected and its 32-byte message echoed whole and right within storm-timeout (the
  connection then stays open until every storm connection has its outcome). Refused: the connect
  was refused (no listener), or the connection was reset or closed before its echo was complete.
  Timed out: no connection, or no complete echo, within storm-timeout (a client left waiting in the
  listener's backlog). Errored: a wrong echo or a fault of the client (out of descriptors or local
  ports); any makes the run invalid.
- **accept p50 / p99**: of the accepted storm connections, from the start of the connect to the
  first echoed byte; the proxy sends it only after it accepted the client, connected the backend
  and relayed the message both ways. (Connect completion alone is answered by the kernel from the
  backlog before the proxy accepts; it is in the JSON as connect_p50/p99_ms.)
- **proxy alive**: the proxy process was still running at the end of the trial.
- **new session after**: after the storm's served connections were closed, a new connection was
  served (connect and checked echo) within after-timeout, attempts retried every 100 ms. Must be yes.
- **proxy CPU ms**: the proxy's on-CPU time (sum of field 1 of /proc/PID/task/*/schedstat over its
  processes) from firing the storm to its last outcome; it includes relaying the held sessions' echoes.
- Figures are median [min–max] over the repeats; each trial starts a fresh proxy, and the order of
  the targets rotates by one each repeat.
`

// Limits explains how each proxy is given the limits, for the results file.
const Limits = `- **session limit** (--limit): tidegate ` + "`limits.max_sessions`" + ` (stops accepting at the
  limit: clients wait in the kernel's backlog; it refuses to start when the limit cannot fit in the
  descriptor limit, two per session plus a reserve of 128); HAProxy ` + "`maxconn`" + ` in global and frontend (stops polling the listener:
  clients wait in the kernel's backlog); nginx ` + "`limit_conn`" + ` on a zone keyed by ` + "`$server_addr`" + `
  (accepts, then closes; shared by the workers), with worker_connections sized for the limit.
- **descriptor limit** (--nofile): every proxy runs under ` + "`prlimit --nofile=N:N`" + ` (soft and hard, so
  it cannot raise it), and HAProxy's ` + "`ulimit-n`" + ` and nginx's ` + "`worker_rlimit_nofile`" + ` say N. A
  proxied session holds two descriptors, so with limit 600 and nofile 1500 the sessions allowed fit
  in the descriptors, and the storm (held + storm connections, two descriptors each) goes far past
  both.
`

// WriteReport writes the results file into dir, named DATE-storm.md or
// DATE-storm-LABEL.md, with its JSON beside it; it returns the markdown
// file's path.
func WriteReport(dir, label string, r *Result) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Connection storm: held sessions and a storm past the session and descriptor limits\n\n")
	harness.WriteVerdict(&b, r.OK, "PASS: no held session lost, every proxy alive and serving after every storm.")
	r.Meta.WriteHeader(&b, "", "")
	p := r.Params
	fmt.Fprintf(&b, "- targets %s; %d repeats; %d held, %d storm (parallel %d: 0 is all at once), limit %d sessions, nofile %d, %d proxy core(s)\n",
		strings.Join(p.Targets, ", "), p.Repeats, p.Held, p.Storm, p.StormParallel, p.Limit, p.NoFile, p.ProxyCores)
	fmt.Fprintf(&b, "- storm-timeout %s, held-interval %s, echo-timeout %s, after-timeout %s, sources %s\n\n",
		p.StormTimeout, p.HeldInterval, p.EchoTimeout, p.AfterTimeout, strings.Join(p.Sources, ","))
	if err := harness.WriteTables(&b, r, WriteTable, WriteTrials); err != nil {
		return "", err
	}
	b.WriteString("\n## What the columns mean\n\n")
	b.WriteString(Definitions)
	b.WriteString("\n## How the limits are set\n\n")
	b.WriteString(Limits)
	var logs strings.Builder
	for i := range r.Trials {
		t := &r.Trials[i]
		if t.ProxyLog == "" {
			continue
		}
		fmt.Fprintf(&logs, "\n%s, repeat %d:\n\n```\n%s\n```\n", t.Target, t.Repeat, t.ProxyLog)
	}
	if logs.Len() > 0 {
		b.WriteString("\n## Proxy output of the failed trials\n")
		b.WriteString(logs.String())
	}
	return harness.Write(dir, harness.Name(r.Meta.Date, "storm", label), b.String(), r)
}

// logExcerpt returns at most n lines of a proxy's output, each cut to 300
// characters: the first of its error lines (tidegate ERR, HAProxy ALERT,
// nginx alert/crit/emerg) where it has any, else its last lines.
func logExcerpt(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var errs []string
	for _, l := range lines {
		for _, mark := range []string{" ERR ", " FTL ", "[ALERT]", "[alert]", "[crit]", "[emerg]"} {
			if strings.Contains(l, mark) {
				errs = append(errs, l)
				break
			}
		}
	}
	switch {
	case len(errs) > n:
		lines = append(errs[:n-1:n-1], fmt.Sprintf("… %d more error lines", len(errs)-n+1))
	case len(errs) > 0:
		lines = errs
	case len(lines) > n:
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + "…"
		}
	}
	return strings.Join(lines, "\n")
}
