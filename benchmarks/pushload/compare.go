package pushload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/procstat"
)

// Server names a push server under test.
type Server string

const (
	// Tidegate is `tidegate push` (session/pushserver).
	Tidegate Server = "tidegate"
	// NetHTTP is `tidegate-bench peer push-nethttp` (benchmarks/ssepeer).
	NetHTTP Server = "nethttp"
)

// CompareConfig describes a comparison of push servers, each started as a
// child process for every trial so that its CPU and memory are its own.
type CompareConfig struct {
	// Load is the load of every trial; its addresses, ServerPID, SSE,
	// Subscribers and hooks are set per trial.
	Load Config
	// Subscribers are the subscriber counts, each run Repeats times for
	// every server, the order of the servers rotated by one from one
	// repeat to the next (harness.Rotate: two servers alternate).
	Subscribers []int
	Repeats     int
	Servers     []Server
	// TidegateBin is the tidegate binary; PeerBin the tidegate-bench one.
	TidegateBin, PeerBin string
	// Window is tidegate's --window; PeerBuffer the peer's --buffer (events
	// per subscriber channel, 0 for its default).
	Window     time.Duration
	PeerBuffer int
}

// Trial is one run against a fresh server.
type Trial struct {
	Server      Server `json:"server"`
	Subscribers int    `json:"subscribers"`
	Repeat      int    `json:"repeat"`
	Position    int    `json:"position"`
	Result      Result `json:"result"`
	// RSS of the server before any subscriber, with every subscriber
	// connected (before the first publish), and at the end of the
	// measurement (still publishing).
	RSSBefore, RSSConnected, RSSActive int64
	// KiBPerSubIdle and KiBPerSubActive are (RSSConnected or RSSActive -
	// RSSBefore) / Subscribers / 1024.
	KiBPerSubIdle, KiBPerSubActive float64
	// DeliveriesPerCPUSec is Delivered over the server's CPU seconds.
	DeliveriesPerCPUSec float64
	// Failure says why the trial does not count (lost, duplicated or
	// reordered events, drops not allowed); it stays out of the medians.
	Failure string `json:"failure,omitempty"`
}

// Summary is one server at one subscriber count over the repeats.
type Summary struct {
	Server                Server
	Subscribers           int
	Trials, Failed        int
	DeliveredPerSec       harness.Spread
	CPUNsPerEvent         harness.Spread
	DeliveriesPerCPUSec   harness.Spread
	KiBPerSubIdle         harness.Spread
	KiBPerSubActive       harness.Spread
	P50Ms, P99Ms, MaxMs   harness.Spread
	Dropped, Closed, Lost int64
}

// Compare runs the trials. A trial whose events were lost, duplicated,
// reordered or dropped against the rules is kept with its Failure and the
// others go on (see Failed); an error is a trial that could not be made
// or measured.
func Compare(ctx context.Context, cfg CompareConfig) ([]Trial, error) {
	if cfg.Repeats < 1 || len(cfg.Subscribers) == 0 || len(cfg.Servers) == 0 {
		return nil, fmt.Errorf("pushload: repeats %d, subscriber counts %v, servers %v: want at least one of each", cfg.Repeats, cfg.Subscribers, cfg.Servers)
	}
	var out []Trial
	for _, n := range cfg.Subscribers {
		err := harness.Rotate(cfg.Repeats, len(cfg.Servers), func(r, pos, i int) error {
			srv, rep := cfg.Servers[i], r+1
			t, err := runTrial(ctx, cfg, srv, n)
			if err != nil {
				return fmt.Errorf("pushload: %s, %d subscribers, repeat %d: %w", srv, n, rep, err)
			}
			t.Repeat, t.Position = rep, pos
			if t.Failure != "" {
				cfg.Load.Logger.Error().Str("server", string(srv)).Int("subscribers", n).Int("repeat", rep).
					Str("failure", t.Failure).Msg("trial failed: left out of the medians")
			}
			cfg.Load.Logger.Info().Str("server", string(srv)).Int("repeat", rep).Msg(t.Result.String())
			out = append(out, t)
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// serverArgv is the command line that starts srv on the two addresses.
func serverArgv(cfg CompareConfig, srv Server, pub, sub string) ([]string, error) {
	switch srv {
	case Tidegate:
		return []string{cfg.TidegateBin, "push", "--publish-listen", pub, "--subscribe-listen", sub,
			"--window", cfg.Window.String(), "--stats-interval", "0", "--log-level", "warn"}, nil
	case NetHTTP:
		argv := []string{cfg.PeerBin, "peer", "push-nethttp", "--publish-listen", pub, "--subscribe-listen", sub, "--log-level", "warn"}
		if cfg.PeerBuffer > 0 {
			argv = append(argv, "--buffer", strconv.Itoa(cfg.PeerBuffer))
		}
		return argv, nil
	}
	return nil, fmt.Errorf("server %q: want %q or %q", srv, Tidegate, NetHTTP)
}

func runTrial(ctx context.Context, cfg CompareConfig, srv Server, n int) (t Trial, err error) {
	t = Trial{Server: srv, Subscribers: n}
	pub, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		return t, err
	}
	sub, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		return t, err
	}
	argv, err := serverArgv(cfg, srv, pub, sub)
	if err != nil {
		return t, err
	}
	p, err := harness.Start(ctx, harness.ChildSpec{Name: "push-" + string(srv), Listen: sub, Argv: argv})
	if err != nil {
		return t, err
	}
	defer func() {
		if serr := p.Stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("stopping %s: %w", srv, serr))
		}
	}()
	pid := p.PID()
	time.Sleep(200 * time.Millisecond) // let its start-up settle
	if t.RSSBefore, err = procstat.RSS(pid); err != nil {
		return t, err
	}
	load := cfg.Load
	load.PublishAddr, load.SubscribeAddr, load.ServerPID, load.SSE, load.Subscribers = pub, sub, pid, true, n
	load.OnConnected = func() (err error) {
		time.Sleep(200 * time.Millisecond) // the last requests handled
		t.RSSConnected, err = procstat.RSS(pid)
		return err
	}
	load.OnMeasured = func() (err error) {
		t.RSSActive, err = procstat.RSS(pid)
		return err
	}
	r, err := Run(ctx, load)
	if r.TotalPublished == 0 && err != nil {
		if !p.Running() {
			err = fmt.Errorf("%w (the server exited: %v; log: %s)", err, p.ExitError(), p.LogTail())
		}
		return t, err
	}
	t.Result = r
	if err != nil {
		t.Failure = err.Error()
	}
	t.KiBPerSubIdle = float64(t.RSSConnected-t.RSSBefore) / float64(n) / 1024
	t.KiBPerSubActive = float64(t.RSSActive-t.RSSBefore) / float64(n) / 1024
	if r.ServerCPU > 0 {
		t.DeliveriesPerCPUSec = float64(r.Delivered) / r.ServerCPU.Seconds()
	}
	return t, nil
}

// Failed returns an error naming every failed trial, or nil.
func Failed(ts []Trial) error {
	return harness.FailedTrials("pushload", "trials", ts, func(t Trial) string {
		if t.Failure == "" {
			return ""
		}
		return fmt.Sprintf("%s, %d subscribers, repeat %d: %s", t.Server, t.Subscribers, t.Repeat, t.Failure)
	})
}

// Summarize groups the trials by subscriber count and server, in the order
// of cfg.
func Summarize(ts []Trial, counts []int, servers []Server) []Summary {
	var out []Summary
	for _, n := range counts {
		for _, srv := range servers {
			s := Summary{Server: srv, Subscribers: n}
			mine := harness.Keep(ts, func(t Trial) bool { return t.Server == srv && t.Subscribers == n })
			s.Trials = len(mine)
			for _, t := range mine {
				r := t.Result
				s.Dropped += r.Dropped
				s.Closed += r.Closed
				s.Lost += r.TotalExpected - r.TotalDelivered - r.Dropped
				if t.Failure != "" {
					s.Failed++
				}
			}
			ok := harness.Keep(mine, func(t Trial) bool { return t.Failure == "" })
			s.DeliveredPerSec = harness.SpreadOf(ok, func(t Trial) float64 { return t.Result.DeliveredPerSec })
			s.CPUNsPerEvent = harness.SpreadOf(ok, func(t Trial) float64 { return float64(t.Result.CPUPerEvent.Nanoseconds()) })
			s.DeliveriesPerCPUSec = harness.SpreadOf(ok, func(t Trial) float64 { return t.DeliveriesPerCPUSec })
			s.KiBPerSubIdle = harness.SpreadOf(ok, func(t Trial) float64 { return t.KiBPerSubIdle })
			s.KiBPerSubActive = harness.SpreadOf(ok, func(t Trial) float64 { return t.KiBPerSubActive })
			s.P50Ms = harness.SpreadOf(ok, func(t Trial) float64 { return harness.Ms(t.Result.P50) })
			s.P99Ms = harness.SpreadOf(ok, func(t Trial) float64 { return harness.Ms(t.Result.P99) })
			s.MaxMs = harness.SpreadOf(ok, func(t Trial) float64 { return harness.Ms(t.Result.MaxLatency) })
			out = append(out, s)
		}
	}
	return out
}

// WriteTrials writes every trial as a Markdown table.
func WriteTrials(w io.Writer, ts []Trial) error {
	rows := make([][]string, 0, len(ts))
	for _, t := range ts {
		r := t.Result
		rows = append(rows, []string{
			strconv.Itoa(t.Subscribers), strconv.Itoa(t.Repeat), strconv.Itoa(t.Position), string(t.Server),
			harness.Fixed(r.DeliveredPerSec, 0), strconv.FormatInt(r.CPUPerEvent.Nanoseconds(), 10), harness.Fixed(t.DeliveriesPerCPUSec, 0),
			harness.Fixed(t.KiBPerSubIdle, 1), harness.Fixed(t.KiBPerSubActive, 1),
			harness.Fixed(harness.Ms(r.P50), 1), harness.Fixed(harness.Ms(r.P99), 1), harness.Fixed(harness.Ms(r.MaxLatency), 1), harness.Fixed(r.ClientCPU.Seconds(), 1),
			strconv.FormatInt(r.TotalDelivered, 10), strconv.FormatInt(r.Dropped, 10), strconv.FormatInt(r.Closed, 10),
			strconv.FormatInt(r.TotalExpected-r.TotalDelivered-r.Dropped, 10), strconv.FormatInt(r.OutOfOrder, 10),
			harness.OrDash(strings.ReplaceAll(t.Failure, "|", "/")),
		})
	}
	return harness.MarkdownTable(w, []string{"subscribers", "repeat", "#", "server", "deliveries/s", "server CPU ns/event",
		"deliveries per CPU-s", "KiB/sub connected", "KiB/sub publishing", "p50 ms", "p99 ms", "max ms", "client CPU s",
		"delivered", "dropped", "closed by server", "lost", "order breaks", "failure"}, "rrrlrrrrrrrrrrrrrrl", rows)
}

// WriteSummary writes the medians [min–max] per subscriber count and
// server, and the ratios of the first server to the second.
func WriteSummary(w io.Writer, ss []Summary) error {
	rows := make([][]string, 0, len(ss))
	for _, s := range ss {
		rows = append(rows, []string{strconv.Itoa(s.Subscribers), string(s.Server), s.DeliveredPerSec.Format(0),
			s.CPUNsPerEvent.Format(0), s.DeliveriesPerCPUSec.Format(0), s.KiBPerSubIdle.Format(1), s.KiBPerSubActive.Format(1),
			s.P50Ms.Format(1), s.P99Ms.Format(1), strconv.FormatInt(s.Dropped, 10), strconv.FormatInt(s.Closed, 10),
			strconv.FormatInt(s.Lost, 10), fmt.Sprintf("%d of %d", s.Failed, s.Trials)})
	}
	if err := harness.MarkdownTable(w, []string{"subscribers", "server", "deliveries/s", "server CPU ns/event", "deliveries per CPU-s",
		"KiB/sub connected", "KiB/sub publishing", "p50 ms", "p99 ms", "dropped", "closed by server", "lost", "failed"},
		"rlrrrrrrrrrrr", rows); err != nil {
		return err
	}
	var ratios [][]string
	for i := 0; i+1 < len(ss); i += 2 {
		a, b := ss[i], ss[i+1]
		if a.Subscribers != b.Subscribers {
			continue
		}
		ratios = append(ratios, []string{strconv.Itoa(a.Subscribers), string(a.Server) + " / " + string(b.Server),
			ratio(a.DeliveredPerSec, b.DeliveredPerSec), ratio(a.DeliveriesPerCPUSec, b.DeliveriesPerCPUSec),
			ratio(a.KiBPerSubIdle, b.KiBPerSubIdle), ratio(a.KiBPerSubActive, b.KiBPerSubActive),
			ratio(a.P50Ms, b.P50Ms), ratio(a.P99Ms, b.P99Ms)})
	}
	if len(ratios) == 0 {
		return nil
	}
	if _, err := io.WriteString(w, "\nRatios of the medians:\n\n"); err != nil {
		return err
	}
	return harness.MarkdownTable(w, []string{"subscribers", "ratio", "deliveries/s", "deliveries per CPU-s", "KiB/sub connected",
		"KiB/sub publishing", "p50", "p99"}, "rlrrrrrr", ratios)
}

func ratio(a, b harness.Spread) string {
	if r, ok := harness.MedianRatio(a, b); ok {
		return harness.Fixed(r, 2) + "×"
	}
	return "–"
}
