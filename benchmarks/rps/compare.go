package rps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// Measurement is one measured run against a freshly spawned server.
type Measurement struct {
	Server   ServerKind `json:"server"`
	Strategy Strategy   `json:"strategy"`
	Mode     SpawnMode  `json:"mode"`
	Procs    int        `json:"procs"`
	Repeat   int        `json:"repeat"`
	// Position is the run's place within its repeat (0 first).
	Position int    `json:"position"`
	Result   Result `json:"result"`
	// Failure says why the run does not count: a request that errored or
	// timed out (Result.Failure). A failed run is kept in the report and
	// left out of every median.
	Failure string `json:"failure,omitempty"`

	// Server memory (child mode only): resident set size before any
	// connection, with every client connected and idle (before the measured
	// run's first request), and with them connected after the run.
	RSSBaselineBytes int64 `json:"rss_baseline_bytes,omitempty"`
	RSSIdleBytes     int64 `json:"rss_idle_bytes,omitempty"`
	RSSActiveBytes   int64 `json:"rss_active_bytes,omitempty"`
	// MemPerConnIdleKiB and MemPerConnActiveKiB are (RSS idle or active −
	// baseline) / clients.
	MemPerConnIdleKiB   float64 `json:"mem_per_conn_idle_kib,omitempty"`
	MemPerConnActiveKiB float64 `json:"mem_per_conn_active_kib,omitempty"`

	// ServerCPUSeconds is the server's time on CPU during the measured run
	// (child mode only), and ServerCPUPerRequestUs that per success.
	ServerCPUSeconds      float64 `json:"server_cpu_seconds,omitempty"`
	ServerCPUPerRequestUs float64 `json:"server_cpu_per_request_us,omitempty"`
}

// Measure spawns the server, runs the load against it and stops it. It
// returns an error when the run could not be made or measured: the server
// did not start or stop, or its memory or CPU could not be read (a figure
// read at one end only would be the server's whole lifetime). Failed
// requests do not make an error here; they set m.Failure.
func Measure(ctx context.Context, load Config, spawn SpawnConfig) (m Measurement, err error) {
	m = Measurement{Server: spawn.Kind, Strategy: spawn.Strategy, Mode: spawn.Mode}
	sp, err := Spawn(ctx, spawn)
	if err != nil {
		return m, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if serr := sp.Stop(sctx); serr != nil {
			err = errors.Join(err, fmt.Errorf("rps: stopping the %s server: %w", spawn.Kind, serr))
		}
	}()
	m.Procs = sp.Procs
	load.Addr = sp.Addr
	child := sp.PID != 0
	var cpu0, cpu1 time.Duration
	var probeErrs [4]error // idle RSS, CPU before, CPU after, active RSS
	if child {
		time.Sleep(100 * time.Millisecond) // let the child's start-up settle
		if m.RSSBaselineBytes, err = sp.RSS(); err != nil {
			return m, err
		}
		load.OnConnected = func() {
			m.RSSIdleBytes, probeErrs[0] = sp.RSS()
			cpu0, probeErrs[1] = sp.CPU()
		}
		load.OnFinished = func() {
			cpu1, probeErrs[2] = sp.CPU()
			m.RSSActiveBytes, probeErrs[3] = sp.RSS()
		}
	}
	res, err := Run(ctx, load)
	if err != nil {
		return m, fmt.Errorf("rps: load on %s server: %w", spawn.Kind, err)
	}
	if err := errors.Join(probeErrs[:]...); err != nil {
		return m, fmt.Errorf("rps: measuring the %s server (pid %d): %w", spawn.Kind, sp.PID, err)
	}
	m.Result = res
	if ferr := res.Failure(); ferr != nil {
		m.Failure = ferr.Error()
	}
	if child {
		n := float64(res.Clients)
		m.MemPerConnIdleKiB = float64(m.RSSIdleBytes-m.RSSBaselineBytes) / n / 1024
		m.MemPerConnActiveKiB = float64(m.RSSActiveBytes-m.RSSBaselineBytes) / n / 1024
		m.ServerCPUSeconds = (cpu1 - cpu0).Seconds()
		if res.Successes > 0 {
			m.ServerCPUPerRequestUs = m.ServerCPUSeconds * 1e6 / float64(res.Successes)
		}
	}
	return m, nil
}

// Compare measures each of kinds repeats times, a fresh server each time,
// the order of the kinds rotated by one from one repeat to the next
// (harness.Rotate: two kinds alternate) so that neither always runs on a
// warmer or cooler machine. A run whose
// requests failed is kept, with its Failure, and the others go on; Failed
// tells whether any did. An error is a run that could not be made.
func Compare(ctx context.Context, load Config, spawn SpawnConfig, kinds []ServerKind, repeats int) ([]Measurement, error) {
	if repeats < 1 {
		return nil, fmt.Errorf("rps: repeats %d: want at least 1", repeats)
	}
	var out []Measurement
	err := harness.Rotate(repeats, len(kinds), func(r, pos, i int) error {
		sc := spawn
		sc.Kind = kinds[i]
		m, err := Measure(ctx, load, sc)
		if err != nil {
			return fmt.Errorf("repeat %d, %s: %w", r+1, sc.Kind, err)
		}
		m.Repeat, m.Position = r+1, pos
		if m.Failure != "" {
			load.Logger.Error().Str("server", string(sc.Kind)).Int("repeat", r+1).Str("failure", m.Failure).
				Msg("run failed: left out of the medians")
		}
		out = append(out, m)
		return nil
	})
	return out, err
}

// Failed returns an error naming every measurement that failed, or nil.
func Failed(ms []Measurement) error {
	return harness.FailedTrials("rps", "runs", ms, func(m Measurement) string {
		if m.Failure == "" {
			return ""
		}
		return fmt.Sprintf("repeat %d, %s: %s", m.Repeat, m.Server, m.Failure)
	})
}

// KindSummary spreads one server's measurements over the repeats. Runs
// counts them all; Failed those left out of every spread for an errored or
// timed-out request, whose Errors and Timeouts are still summed.
type KindSummary struct {
	Server              ServerKind     `json:"server"`
	Runs                int            `json:"runs"`
	Failed              int            `json:"failed"`
	RPS                 harness.Spread `json:"rps"`
	AvgMs               harness.Spread `json:"avg_ms"`
	P50Ms               harness.Spread `json:"p50_ms"`
	P99Ms               harness.Spread `json:"p99_ms"`
	Errors              int64          `json:"errors"`
	Timeouts            int64          `json:"timeouts"`
	MemPerConnIdleKiB   harness.Spread `json:"mem_per_conn_idle_kib"`
	MemPerConnActiveKiB harness.Spread `json:"mem_per_conn_active_kib"`
	CPUPerRequestUs     harness.Spread `json:"server_cpu_per_request_us"`
}

// Summary is the comparison of the servers measured.
type Summary struct {
	Kinds []KindSummary `json:"kinds"`
	// The ratios compare the medians of the first kind to the second
	// (tidegate / goroutine when both ran): RPS above 1 and latency, memory
	// and CPU below 1 favour the first.
	RPSRatio           float64 `json:"rps_ratio,omitempty"`
	P50Ratio           float64 `json:"p50_ratio,omitempty"`
	P99Ratio           float64 `json:"p99_ratio,omitempty"`
	MemActiveRatio     float64 `json:"mem_per_conn_active_ratio,omitempty"`
	CPUPerRequestRatio float64 `json:"cpu_per_request_ratio,omitempty"`
}

// Summarize groups ms by server, in kinds order.
func Summarize(ms []Measurement, kinds []ServerKind) Summary {
	var s Summary
	for _, k := range kinds {
		ks := KindSummary{Server: k}
		mine := harness.Keep(ms, func(m Measurement) bool { return m.Server == k })
		ks.Runs = len(mine)
		for _, m := range mine {
			ks.Errors += m.Result.Errors
			ks.Timeouts += m.Result.Timeouts
			if m.Failure != "" {
				ks.Failed++
			}
		}
		ok := harness.Keep(mine, func(m Measurement) bool { return m.Failure == "" })
		ks.RPS = harness.SpreadOf(ok, func(m Measurement) float64 { return m.Result.RPS })
		ks.AvgMs = harness.SpreadOf(ok, func(m Measurement) float64 { return m.Result.AvgMs })
		ks.P50Ms = harness.SpreadOf(ok, func(m Measurement) float64 { return m.Result.P50Ms })
		ks.P99Ms = harness.SpreadOf(ok, func(m Measurement) float64 { return m.Result.P99Ms })
		// Memory and CPU are the child's own only when it was one.
		child := harness.Keep(ok, func(m Measurement) bool { return m.Mode == Child })
		ks.MemPerConnIdleKiB = harness.SpreadOf(child, func(m Measurement) float64 { return m.MemPerConnIdleKiB })
		ks.MemPerConnActiveKiB = harness.SpreadOf(child, func(m Measurement) float64 { return m.MemPerConnActiveKiB })
		ks.CPUPerRequestUs = harness.SpreadOf(child, func(m Measurement) float64 { return m.ServerCPUPerRequestUs })
		s.Kinds = append(s.Kinds, ks)
	}
	if len(s.Kinds) == 2 {
		a, b := s.Kinds[0], s.Kinds[1]
		s.RPSRatio, _ = harness.MedianRatio(a.RPS, b.RPS)
		s.P50Ratio, _ = harness.MedianRatio(a.P50Ms, b.P50Ms)
		s.P99Ratio, _ = harness.MedianRatio(a.P99Ms, b.P99Ms)
		s.MemActiveRatio, _ = harness.MedianRatio(a.MemPerConnActiveKiB, b.MemPerConnActiveKiB)
		s.CPUPerRequestRatio, _ = harness.MedianRatio(a.CPUPerRequestUs, b.CPUPerRequestUs)
	}
	return s
}

// WriteMeasurements prints one row per measurement.
func WriteMeasurements(w io.Writer, ms []Measurement) error {
	rows := make([][]string, 0, len(ms))
	for _, m := range ms {
		r := m.Result
		rows = append(rows, []string{strconv.Itoa(m.Repeat), string(m.Server), string(m.Strategy), strconv.Itoa(r.Clients),
			strconv.Itoa(r.Pipeline), harness.Fixed(r.RPS, 0), harness.Fixed(r.AvgMs, 4), harness.Fixed(r.P50Ms, 4),
			harness.Fixed(r.P99Ms, 4), strconv.FormatInt(r.Errors, 10), strconv.FormatInt(r.Timeouts, 10), perClient(r),
			harness.Fixed(m.ServerCPUPerRequestUs, 2), harness.Fixed(r.ClientCPUSeconds, 2),
			harness.Fixed(m.MemPerConnIdleKiB, 1), harness.Fixed(m.MemPerConnActiveKiB, 1)})
	}
	return harness.TextTable{Right: true, Closed: true}.Write(w, []string{"repeat", "server", "strategy", "clients", "pipeline",
		"RPS", "avg ms", "p50 ms", "p99 ms", "errors", "timeouts", "per-client calls/s min/med/max", "srv CPU µs/req",
		"client CPU s", "KiB/conn idle", "KiB/conn active"}, rows)
}

// WriteSummary prints the per-server medians [min–max] and the ratios.
func WriteSummary(w io.Writer, s Summary) error {
	rows := make([][]string, 0, len(s.Kinds))
	for _, k := range s.Kinds {
		rows = append(rows, []string{string(k.Server), strconv.Itoa(k.Runs), strconv.Itoa(k.Failed), k.RPS.Format(0),
			k.P50Ms.Format(3), k.P99Ms.Format(3), strconv.FormatInt(k.Errors, 10), strconv.FormatInt(k.Timeouts, 10),
			k.CPUPerRequestUs.Format(2), k.MemPerConnActiveKiB.Format(1)})
	}
	if err := (harness.TextTable{Closed: true}).Write(w, []string{"server", "runs", "failed", "RPS", "p50 ms", "p99 ms", "errors",
		"timeouts", "srv CPU µs/req", "KiB/conn active"}, rows); err != nil {
		return err
	}
	if len(s.Kinds) == 2 {
		_, err := fmt.Fprintf(w, "ratio %s/%s (medians): RPS %.2f, p50 %.2f, p99 %.2f, server CPU/request %.2f, memory/connection %.2f\n",
			s.Kinds[0].Server, s.Kinds[1].Server, s.RPSRatio, s.P50Ratio, s.P99Ratio, s.CPUPerRequestRatio, s.MemActiveRatio)
		return err
	}
	return nil
}

// Report is what `tidegate-bench bench rps --json` prints: where and how the
// benchmark ran and what it measured.
type Report struct {
	Time     time.Time `json:"time"`
	Machine  Machine   `json:"machine"`
	Args     []string  `json:"args"`
	Spawn    string    `json:"spawn"`
	Strategy Strategy  `json:"strategy,omitempty"`
	Mode     SpawnMode `json:"mode,omitempty"`
	Repeats  int       `json:"repeats,omitempty"`
	// Result is the run against --addr when nothing was spawned.
	Result       *Result       `json:"result,omitempty"`
	Measurements []Measurement `json:"measurements,omitempty"`
	Summary      *Summary      `json:"summary,omitempty"`
}
