package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/mcload"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/procstat"
	"github.com/tidegate/tidegate/benchmarks/session"
)

// benchHandshakeCommand is a login storm.
func benchHandshakeCommand() *cli.Command {
	return &cli.Command{
		Name:  "handshake",
		Usage: "a storm of Minecraft handshakes and Login Starts: accepted rate, proxy CPU per login, refusals by reason, p99 time to play",
		Description: "Each attempt connects, sends Handshake and Login Start (offline, protocol 5), waits for\n" +
			"Login Success (accepted) or a refusal (a login Disconnect, labelled with its text, or a\n" +
			"close, reset or timeout) and closes. Without --addr it starts the fake backend and every\n" +
			"--target proxy itself, and runs --repeats storms per target, rotating the order of the\n" +
			"targets each repeat; it then prints median [min–max] of the rate, p50, p99 and the proxy's\n" +
			"CPU per accepted login (its threads' schedstat), and the ratios of the first target to the\n" +
			"others. --max-failed and --max-p99-ms turn the figures into a pass/fail exit.",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "count", Value: 5000, Usage: "logins per storm"},
			&cli.IntFlag{Name: "parallel", Value: 64, Usage: "logins in progress at once"},
			sourcesFlag(),
			&cli.StringFlag{Name: "target", Value: "tidegate", Usage: "proxies to start, comma-separated: tidegate, tidegate-raw, goproxy, haproxy, haproxy-splice or nginx"},
			&cli.IntFlag{Name: "repeats", Value: 1, Usage: "storms per target (with several targets, in rotated order)"},
			&cli.BoolFlag{Name: "syscalls", Usage: "after the storms, one more storm per target on a fresh copy under perf: system calls per accepted login"},
			&cli.StringFlag{Name: "addr", Usage: "storm an already running proxy or server at this address instead"},
			&cli.IntFlag{Name: "proxy-cores", Value: 1, Usage: "threads/loops/workers of the proxy"},
			tidegateEnvFlag("GOMAXPROCS=1, GOGC=50"),
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "bound on each attempt"},
			&cli.IntFlag{Name: "max-failed", Value: 0, Usage: "fail if more attempts than this (in any storm) did not reach play (-1: no gate)"},
			&cli.Float64Flag{Name: "max-p99-ms", Usage: "fail if the p99 time to reach play of any storm exceeds this (0: no gate)"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
			haproxyBinFlag(),
			nginxBinFlag(),
			tidegateBinFlag(),
		}, logflags.Flags()...),
		Action: runBenchHandshake,
	}
}

// handshakeTrial is one storm against one target.
type handshakeTrial struct {
	Target string `json:"target"`
	Repeat int    `json:"repeat"`
	*mcload.HandshakeResult
	// ProxyCPUUsPerLogin is the proxy's CPU time over the storm divided by
	// the accepted logins; 0 when the proxy's process is not known (--addr).
	ProxyCPUUsPerLogin float64 `json:"proxy_cpu_us_per_login,omitempty"`
	Error              string  `json:"error,omitempty"`
}

// handshakeSummary is one target's figures over its storms.
type handshakeSummary struct {
	Target      string         `json:"target"`
	PerSec      harness.Spread `json:"accepted_per_sec"`
	P50Ms       harness.Spread `json:"p50_ms"`
	P99Ms       harness.Spread `json:"p99_ms"`
	CPUUsPerLog harness.Spread `json:"proxy_cpu_us_per_login"`
	// SyscallsPerLogin is from the --syscalls storm (a copy under perf, not
	// used for CPU); 0 without one.
	SyscallsPerLogin float64 `json:"syscalls_per_login,omitempty"`
}

func runBenchHandshake(c *cli.Context) error {
	log, sources, err := stormSetup(c)
	if err != nil {
		return err
	}
	ctx, stop := sessionContext(c)
	defer stop()
	cfg := mcload.HandshakeConfig{Count: c.Int("count"), Parallel: c.Int("parallel"), Sources: sources, Timeout: c.Duration("timeout")}
	repeats := c.Int("repeats")
	if repeats < 1 {
		return fmt.Errorf("--repeats %d: want at least 1", repeats)
	}
	type target struct {
		name, addr string
		pids       []int
	}
	var targets []target
	var env *session.Environment
	if addr := c.String("addr"); addr != "" {
		if c.Bool("syscalls") {
			return fmt.Errorf("--syscalls needs a proxy this command starts, not --addr")
		}
		targets = []target{{name: addr, addr: addr}}
	} else {
		kinds, err := peers.ParseKinds(c.String("target"))
		if err != nil {
			return fmt.Errorf("--target %q: %w", c.String("target"), err)
		}
		tgEnv, err := tidegateEnv(c)
		if err != nil {
			return err
		}
		exe, err := tidegateBinary(c)
		if err != nil {
			return err
		}
		if c.Bool("syscalls") {
			if err := peers.PerfAvailable(); err != nil {
				return fmt.Errorf("--syscalls: %w", err)
			}
		}
		opts := launchOptions(c, kinds, exe)
		opts.Sessions, opts.TidegateEnv = c.Int("parallel"), tgEnv
		env, err = session.Launch(opts)
		if err != nil {
			return err
		}
		defer env.Close()
		for _, t := range env.Targets() {
			targets = append(targets, target{name: t.Name, addr: t.Addr, pids: t.PIDs})
		}
	}
	var trials []handshakeTrial
	runErr := harness.Rotate(repeats, len(targets), func(r, _, i int) error {
		t := targets[i]
		log.Info().Str("target", t.name).Str("addr", t.addr).Int("repeat", r).Int("count", cfg.Count).Int("parallel", cfg.Parallel).
			Msg("handshake storm starting")
		tr, err := handshakeStorm(ctx, cfg, t.addr, t.pids)
		tr.Target, tr.Repeat = t.name, r
		if err != nil {
			tr.Error = err.Error()
		}
		if tr.HandshakeResult != nil {
			trials = append(trials, tr)
		}
		if err != nil {
			return fmt.Errorf("%s, repeat %d: %w", t.name, r, err)
		}
		return nil
	})
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.name
	}
	sums := summarizeHandshakes(names, trials)
	if c.Bool("syscalls") && runErr == nil {
		for i := range sums {
			n, err := countLoginSyscalls(ctx, env, sums[i].Target, cfg)
			if err != nil {
				runErr = fmt.Errorf("%s, syscall storm: %w", sums[i].Target, err)
				break
			}
			sums[i].SyscallsPerLogin = n
		}
	}
	if c.Bool("json") {
		if err := writeJSON(c, map[string]any{"trials": trials, "summary": sums}); err != nil {
			return err
		}
	} else {
		printHandshakes(trials, sums)
	}
	if runErr != nil {
		return runErr
	}
	var fails []string
	for _, tr := range trials {
		if m := c.Int("max-failed"); m >= 0 && tr.Failed > m {
			fails = append(fails, fmt.Sprintf("%s repeat %d: %d attempts failed, at most %d allowed", tr.Target, tr.Repeat, tr.Failed, m))
		}
		if m := c.Float64("max-p99-ms"); m > 0 && tr.P99Ms > m {
			fails = append(fails, fmt.Sprintf("%s repeat %d: p99 time to play %.3f ms exceeds %.3f ms", tr.Target, tr.Repeat, tr.P99Ms, m))
		}
	}
	if len(fails) > 0 {
		return cli.Exit(fmt.Sprintf("handshake storm FAILED: %v", fails), 1)
	}
	return nil
}

// handshakeStorm runs one storm at addr and measures the CPU of pids over it.
func handshakeStorm(ctx context.Context, cfg mcload.HandshakeConfig, addr string, pids []int) (handshakeTrial, error) {
	cfg.Addr = addr
	var before procstat.Sample
	if len(pids) > 0 {
		s, err := procstat.Read(pids)
		if err != nil {
			return handshakeTrial{}, fmt.Errorf("reading the proxy's CPU: %w", err)
		}
		before = s
	}
	res, err := mcload.Handshake(ctx, cfg)
	tr := handshakeTrial{HandshakeResult: res}
	if res == nil || len(pids) == 0 {
		return tr, err
	}
	after, serr := procstat.Read(pids)
	if serr != nil {
		return tr, errors.Join(err, fmt.Errorf("reading the proxy's CPU: %w", serr))
	}
	if res.Accepted > 0 {
		tr.ProxyCPUUsPerLogin = float64(after.CPUNs-before.CPUNs) / 1e3 / float64(res.Accepted)
	}
	return tr, err
}

// countLoginSyscalls runs one storm on a fresh copy of the named target
// under perf and returns its system calls per accepted login.
func countLoginSyscalls(ctx context.Context, env *session.Environment, name string, cfg mcload.HandshakeConfig) (float64, error) {
	ct, err := env.StartCounted(name)
	if err != nil {
		return 0, err
	}
	cfg.Addr = ct.Addr
	if err := ct.Counter.Enable(); err != nil {
		return 0, errors.Join(err, ct.Stop())
	}
	res, err := mcload.Handshake(ctx, cfg)
	err = errors.Join(err, ct.Counter.Disable(), ct.Stop())
	if err != nil {
		return 0, err
	}
	if res.Failed > 0 || res.Accepted == 0 {
		return 0, fmt.Errorf("%d of %d logins failed under perf", res.Failed, res.Count)
	}
	n, err := ct.Counter.Count()
	if err != nil {
		return 0, err
	}
	return float64(n) / float64(res.Accepted), nil
}

func summarizeHandshakes(names []string, trials []handshakeTrial) []handshakeSummary {
	out := make([]handshakeSummary, 0, len(names))
	for _, n := range names {
		ok := harness.Keep(trials, func(tr handshakeTrial) bool { return tr.Target == n && tr.Error == "" })
		out = append(out, handshakeSummary{Target: n,
			PerSec: harness.SpreadOf(ok, func(tr handshakeTrial) float64 { return tr.AcceptedPerSec }),
			P50Ms:  harness.SpreadOf(ok, func(tr handshakeTrial) float64 { return tr.P50Ms }),
			P99Ms:  harness.SpreadOf(ok, func(tr handshakeTrial) float64 { return tr.P99Ms }),
			// 0: the proxy's process was not known (--addr).
			CPUUsPerLog: harness.SpreadOf(harness.Keep(ok, func(tr handshakeTrial) bool { return tr.ProxyCPUUsPerLogin > 0 }),
				func(tr handshakeTrial) float64 { return tr.ProxyCPUUsPerLogin }),
		})
	}
	return out
}

func printHandshakes(trials []handshakeTrial, sums []handshakeSummary) {
	for _, tr := range trials {
		fmt.Printf("handshake %s (repeat %d): %d attempts, %d in parallel, in %.2fs\n", tr.Target, tr.Repeat, tr.Count, tr.Parallel, tr.Seconds)
		cpu := ""
		if tr.ProxyCPUUsPerLogin > 0 {
			cpu = fmt.Sprintf("; proxy CPU %.1f µs/login", tr.ProxyCPUUsPerLogin)
		}
		fmt.Printf("  accepted %d (%.0f/s), failed %d; time to play p50 %.3f ms, p99 %.3f ms, max %.3f ms%s\n",
			tr.Accepted, tr.AcceptedPerSec, tr.Failed, tr.P50Ms, tr.P99Ms, tr.MaxMs, cpu)
		for _, k := range tr.SortedRejections() {
			fmt.Printf("  refused: %s x%d\n", k, tr.Rejections[k])
		}
		if tr.Error != "" {
			fmt.Printf("  error: %s\n", tr.Error)
		}
	}
	if len(sums) == 0 || (len(sums) == 1 && sums[0].PerSec.N <= 1 && sums[0].SyscallsPerLogin == 0) {
		return
	}
	fmt.Println()
	rows := make([][]string, 0, len(sums))
	for _, s := range sums {
		sys := "–"
		if s.SyscallsPerLogin > 0 {
			sys = harness.Fixed(s.SyscallsPerLogin, 1)
		}
		rows = append(rows, []string{s.Target, s.PerSec.Format(0), s.P50Ms.Format(2), s.P99Ms.Format(1), s.CPUUsPerLog.Format(1), sys})
	}
	harness.MarkdownTable(os.Stdout, []string{"target", "accepted/s", "p50 ms", "p99 ms", "proxy CPU µs/login", "syscalls/login"}, "lrrrrr", rows)
	if len(sums) < 2 || sums[0].PerSec.N == 0 {
		return
	}
	first := sums[0]
	var ratios []string
	for _, s := range sums[1:] {
		if s.PerSec.N == 0 {
			continue
		}
		r := fmt.Sprintf("%s/%s: rate %.2f×", first.Target, s.Target, first.PerSec.Median/s.PerSec.Median)
		if first.CPUUsPerLog.N > 0 && s.CPUUsPerLog.N > 0 {
			r += fmt.Sprintf(", CPU per login %.2f×", first.CPUUsPerLog.Median/s.CPUUsPerLog.Median)
		}
		ratios = append(ratios, r)
	}
	fmt.Println()
	fmt.Println(strings.Join(ratios, "; "))
}
