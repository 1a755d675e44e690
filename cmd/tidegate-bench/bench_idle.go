package main

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/mcload"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/session"
	"github.com/tidegate/tidegate/benchmarks/sockopt"
)

// benchIdleCommand holds many idle proxied sessions and measures the proxy.
func benchIdleCommand() *cli.Command {
	return &cli.Command{
		Name:  "idle",
		Usage: "hold N logged-in idle sessions through a proxy: memory and descriptors per session, and that they stay alive",
		Description: "Starts the fake backend and the proxy under test (each its own process), then worker\n" +
			"processes (`tidegate-bench bench idle-worker`) that open the sessions from several loopback\n" +
			"source addresses, log each in and echo one small PLAY packet. The proxy's RSS growth\n" +
			"(VmRSS of its processes) divided by the sessions, its OS threads (/proc/PID/status\n" +
			"Threads: OS threads are what every proxy has; --heap adds tidegate's goroutines) and\n" +
			"open files per session are reported, and the RSS growth again at the end of the\n" +
			"hold (the proxy at rest). After --hold every session echoes once more; --min-alive and\n" +
			"--max-rss-per-session turn the figures into a pass/fail exit.\n\n" +
			"--heap (tidegate) starts the proxy with --metrics-listen and reads its Go runtime too: the\n" +
			"live heap per session (after two forced GCs before the logins and at the end of the hold,\n" +
			"read after the RSS), heap in use, stacks and goroutines; --heap-profile FILE saves its heap\n" +
			"profile at the end of the hold and the one before the logins next to it (heap.pb.gz and\n" +
			"heap-before.pb.gz: go tool pprof -sample_index=inuse_space -base heap-before.pb.gz heap.pb.gz), and with\n" +
			"--tidegate-env GODEBUG=memprofilerate=1 every object is in it (not only a sample; the RSS\n" +
			"figures of such a run are not representative). With --addr, --metrics-addr names the\n" +
			"running proxy's metrics address for the same figures.",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "sessions", Value: 1000, Usage: "idle sessions to hold"},
			&cli.IntFlag{Name: "workers", Value: 0, Usage: "client processes", DefaultText: "one per 8,000 sessions"},
			&cli.IntFlag{Name: "parallel", Value: 64, Usage: "logins in progress at once per worker"},
			sourcesFlag(),
			&cli.DurationFlag{Name: "hold", Value: 10 * time.Second, Usage: "how long the sessions stay idle before the liveness check"},
			&cli.StringFlag{Name: "target", Value: "tidegate", Usage: "proxy: tidegate, tidegate-raw, goproxy, haproxy, haproxy-splice or nginx"},
			&cli.StringFlag{Name: "addr", Usage: "measure an already running proxy at this address instead (no process figures)"},
			&cli.StringFlag{Name: "metrics-addr", Usage: "with --addr: the running tidegate proxy's --metrics-listen `ADDR` (started with --pprof), for its heap and goroutines"},
			&cli.BoolFlag{Name: "heap", Usage: "tidegate: serve the proxy's metrics and report its live heap, heap in use and goroutines per session"},
			&cli.StringFlag{Name: "heap-profile", Usage: "tidegate: save the proxy's heap profile at the end of the hold into `FILE` (implies --heap)"},
			tidegateEnvFlag("GODEBUG=memprofilerate=1, GOGC=50"),
			&cli.IntFlag{Name: "proxy-cores", Value: 1, Usage: "threads/loops/workers of the proxy"},
			&cli.IntFlag{Name: "goproxy-gomaxprocs", Usage: "GOMAXPROCS of goproxy", DefaultText: "--proxy-cores"},
			&cli.IntFlag{Name: "min-alive", Value: -1, Usage: "fail unless at least this many sessions are alive after --hold", DefaultText: "all"},
			&cli.Float64Flag{Name: "max-rss-per-session", Usage: "fail if the proxy's RSS growth per session exceeds this many KiB (0: no gate)"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "bound on each login and echo"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
			haproxyBinFlag(),
			nginxBinFlag(),
			tidegateBinFlag(),
		}, logflags.Flags()...),
		Action: runBenchIdle,
	}
}

func runBenchIdle(c *cli.Context) error {
	log, sources, err := stormSetup(c)
	if err != nil {
		return err
	}
	n := c.Int("sessions")
	workers := c.Int("workers")
	if workers <= 0 {
		workers = (n + 7999) / 8000
	}
	exe, err := thisProgram("idle workers")
	if err != nil {
		return err
	}
	ctx, stop := sessionContext(c)
	defer stop()
	cfg := mcload.IdleConfig{
		Addr: c.String("addr"), Sessions: n, Workers: workers, Parallel: c.Int("parallel"), Sources: sources,
		Hold: c.Duration("hold"), Timeout: c.Duration("timeout"),
		WorkerCommand: []string{exe, "bench", "idle-worker", "--log-level", c.String("log-level")},
		MetricsAddr:   c.String("metrics-addr"), HeapProfile: c.String("heap-profile"),
	}
	heap := c.Bool("heap") || cfg.HeapProfile != ""
	if cfg.Addr != "" && heap && cfg.MetricsAddr == "" {
		return fmt.Errorf("--heap and --heap-profile with --addr %s need the running proxy's --metrics-addr", cfg.Addr)
	}
	target := c.String("target")
	if cfg.Addr == "" {
		kinds, err := peers.ParseKinds(target)
		if err != nil || len(kinds) != 1 {
			return fmt.Errorf("--target %q: want exactly one proxy (%v)", target, err)
		}
		tgEnv, err := tidegateEnv(c)
		if err != nil {
			return err
		}
		tg, err := tidegateBinary(c)
		if err != nil {
			return err
		}
		if heap && kinds[0] != peers.KindTidegate && kinds[0] != peers.KindTidegateRaw {
			return fmt.Errorf("--heap and --heap-profile: %s has no Go heap to read (tidegate and tidegate-raw do)", target)
		}
		opts := launchOptions(c, kinds, tg)
		opts.Sessions, opts.TidegateMetrics, opts.TidegateEnv = n, heap, tgEnv
		env, err := session.Launch(opts)
		if err != nil {
			return err
		}
		defer env.Close()
		t := env.Targets()[0]
		cfg.Addr, cfg.PIDs, cfg.MetricsAddr = t.Addr, t.PIDs, t.MetricsAddr
	} else {
		target = cfg.Addr
	}
	log.Info().Str("target", target).Str("addr", cfg.Addr).Int("sessions", n).Int("workers", workers).
		Dur("hold", cfg.Hold).Msg("idle probe starting")
	res, err := mcload.Idle(ctx, cfg)
	if res == nil {
		return err
	}
	res.Target = target
	if c.Bool("json") {
		if err := harness.WriteJSON(os.Stdout, res); err != nil {
			return err
		}
	} else {
		fmt.Printf("idle %s: %d sessions by %d workers, %d logged in, %d alive after %.1fs\n",
			target, res.Sessions, res.Workers, res.LoggedIn, res.Alive, res.HoldSeconds)
		if res.ProxyMeasured {
			fmt.Printf("proxy RSS %.1f MiB -> %.1f MiB: %.2f KiB per session; open files per session %.2f; OS threads %d -> %d\n",
				res.RSSBeforeMiB, res.RSSAfterMiB, res.RSSPerSession, res.FDsPerSession, res.ThreadsBefore, res.ThreadsAfter)
			fmt.Printf("proxy CPU %.0f us per login\n", res.CPUPerLogin)
			if res.MeasurementGap == "" {
				fmt.Printf("proxy at the end of the hold: RSS %.1f MiB, %.2f KiB per session; OS threads %d\n",
					res.RSSAfterHoldMiB, res.RSSPerSessionAfterHold, res.ThreadsAfterHold)
			} else {
				fmt.Printf("proxy not measured: %s\n", res.MeasurementGap)
			}
		} else {
			fmt.Printf("proxy not measured: %s\n", res.MeasurementGap)
		}
		switch {
		case res.HeapMeasured:
			fmt.Printf("proxy Go heap at rest: live %.1f MiB -> %.1f MiB: %.2f KiB per session (%s); in use %.1f -> %.1f MiB: %.2f KiB per session; "+
				"stacks %.2f MiB; goroutines %d -> %d after the logins -> %d at the end of the hold\n",
				res.HeapBeforeMiB, res.HeapAfterMiB, res.HeapPerSession, res.HeapSource, res.HeapInuseBeforeMiB, res.HeapInuseAfterMiB,
				res.HeapInusePerSession, res.StackInuseAfterMiB, res.GoroutinesBefore, res.GoroutinesAfterLogin, res.GoroutinesAfterHold)
			fmt.Printf("proxy GC over the logins: %d cycles, %.1f us of GC CPU per login\n", res.GCCycles, res.GCCPUPerLogin)
			if res.HeapProfile != "" {
				fmt.Printf("heap profiles: go tool pprof -sample_index=inuse_space -base %s %s\n", res.HeapProfileBefore, res.HeapProfile)
			}
		case res.HeapMeasurementGap != "":
			fmt.Printf("proxy heap not measured: %s\n", res.HeapMeasurementGap)
		}
		for _, k := range slices.Sorted(maps.Keys(res.Failures)) {
			fmt.Printf("failed: %s x%d\n", k, res.Failures[k])
		}
	}
	if err != nil {
		return err
	}
	minAlive := c.Int("min-alive")
	if minAlive < 0 {
		minAlive = n
	}
	if fails := idleFailures(res, minAlive, c.Float64("max-rss-per-session"), len(cfg.PIDs) > 0, heap); len(fails) > 0 {
		return cli.Exit(fmt.Sprintf("idle probe FAILED: %v", fails), 1)
	}
	return nil
}

// idleFailures returns why an idle probe failed: fewer than minAlive
// sessions alive, RSS per session over maxRSS (0: no gate), and a figure
// the run was to take and could not: the proxy's process figures when this
// command started the proxy (launched), its Go heap when heap was asked for.
func idleFailures(res *mcload.IdleResult, minAlive int, maxRSS float64, launched, heap bool) []string {
	var fails []string
	if res.Alive < minAlive {
		fails = append(fails, fmt.Sprintf("%d sessions alive, want at least %d", res.Alive, minAlive))
	}
	if maxRSS > 0 {
		if !res.ProxyMeasured {
			fails = append(fails, "--max-rss-per-session set but the proxy's memory was not measured")
		} else if res.RSSPerSession > maxRSS {
			fails = append(fails, fmt.Sprintf("RSS per session %.2f KiB exceeds %.2f KiB", res.RSSPerSession, maxRSS))
		}
	}
	if launched && res.MeasurementGap != "" {
		fails = append(fails, "the proxy's process figures: "+res.MeasurementGap)
	}
	if heap && !res.HeapMeasured {
		why := cmp.Or(res.HeapMeasurementGap, "no session logged in")
		fails = append(fails, "--heap set but the proxy's Go heap was not measured: "+why)
	}
	return fails
}

// benchIdleWorkerCommand is the hidden worker process of `bench idle`.
func benchIdleWorkerCommand() *cli.Command {
	return &cli.Command{
		Name:   "idle-worker",
		Usage:  "internal: hold idle sessions for `tidegate-bench bench idle` (reports JSON lines on stdout)",
		Hidden: true,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "addr", Required: true},
			&cli.IntFlag{Name: "id"},
			&cli.IntFlag{Name: "count", Required: true},
			&cli.IntFlag{Name: "parallel", Value: 64},
			&cli.StringFlag{Name: "sources"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second},
		}, logflags.Flags()...),
		Action: func(c *cli.Context) error {
			sources, err := sockopt.ParseSources(c.String("sources"))
			if err != nil {
				return err
			}
			ctx, stop := sessionContext(c)
			defer stop()
			return mcload.RunWorker(ctx, mcload.WorkerConfig{
				Addr: c.String("addr"), ID: c.Int("id"), Count: c.Int("count"), Parallel: c.Int("parallel"),
				Sources: sources, Timeout: c.Duration("timeout"),
			}, os.Stdin, os.Stdout)
		},
	}
}
