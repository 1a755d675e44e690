package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/mcload"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/session"
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
			"Threads: tidegate has no goroutine count endpoint, and OS threads are what every proxy\n" +
			"has) and open files per session are reported. After --hold every session echoes once\n" +
			"more; --min-alive and --max-rss-per-session turn the figures into a pass/fail exit.",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "sessions", Value: 1000, Usage: "idle sessions to hold"},
			&cli.IntFlag{Name: "workers", Value: 0, Usage: "client processes", DefaultText: "one per 8,000 sessions"},
			&cli.IntFlag{Name: "parallel", Value: 64, Usage: "logins in progress at once per worker"},
			sourcesFlag(),
			&cli.DurationFlag{Name: "hold", Value: 10 * time.Second, Usage: "how long the sessions stay idle before the liveness check"},
			&cli.StringFlag{Name: "target", Value: "tidegate", Usage: "proxy: tidegate, tidegate-raw, goproxy, haproxy, haproxy-splice or nginx"},
			&cli.StringFlag{Name: "addr", Usage: "measure an already running proxy at this address instead (no process figures)"},
			&cli.IntFlag{Name: "proxy-cores", Value: 1, Usage: "threads/loops/workers of the proxy"},
			&cli.IntFlag{Name: "goproxy-gomaxprocs", Usage: "GOMAXPROCS of goproxy", DefaultText: "--proxy-cores"},
			&cli.IntFlag{Name: "min-alive", Value: -1, Usage: "fail unless at least this many sessions are alive after --hold", DefaultText: "all"},
			&cli.Float64Flag{Name: "max-rss-per-session", Usage: "fail if the proxy's RSS growth per session exceeds this many KiB (0: no gate)"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "bound on each login and echo"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
			&cli.StringFlag{Name: "haproxy-bin", Value: "haproxy", Usage: "HAProxy program"},
			&cli.StringFlag{Name: "nginx-bin", Value: "nginx", Usage: "nginx program"},
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
	}
	target := c.String("target")
	if cfg.Addr == "" {
		kinds, err := peers.ParseKinds(target)
		if err != nil || len(kinds) != 1 {
			return fmt.Errorf("--target %q: want exactly one proxy (%v)", target, err)
		}
		tg, err := tidegateBinary(c)
		if err != nil {
			return err
		}
		env, err := session.Launch(session.LaunchOptions{Kinds: kinds, ProxyCores: c.Int("proxy-cores"), Executable: tg,
			GoMaxProcs: c.Int("goproxy-gomaxprocs"), BackendLoops: 1, Sessions: n,
			HAProxy: c.String("haproxy-bin"), Nginx: c.String("nginx-bin")})
		if err != nil {
			return err
		}
		defer env.Close()
		t := env.Targets()[0]
		cfg.Addr, cfg.PIDs = t.Addr, t.PIDs
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
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		fmt.Printf("idle %s: %d sessions by %d workers, %d logged in, %d alive after %.1fs\n",
			target, res.Sessions, res.Workers, res.LoggedIn, res.Alive, res.HoldSeconds)
		if res.ProxyMeasured {
			fmt.Printf("proxy RSS %.1f MiB -> %.1f MiB: %.2f KiB per session; open files per session %.2f; OS threads %d -> %d\n",
				res.RSSBeforeMiB, res.RSSAfterMiB, res.RSSPerSession, res.FDsPerSession, res.ThreadsBefore, res.ThreadsAfter)
		} else {
			fmt.Printf("proxy not measured: %s\n", res.MeasurementGap)
		}
		keys := make([]string, 0, len(res.Failures))
		for k := range res.Failures {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
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
	var fails []string
	if res.Alive < minAlive {
		fails = append(fails, fmt.Sprintf("%d sessions alive, want at least %d", res.Alive, minAlive))
	}
	if max := c.Float64("max-rss-per-session"); max > 0 {
		if !res.ProxyMeasured {
			fails = append(fails, "--max-rss-per-session set but the proxy's memory was not measured")
		} else if res.RSSPerSession > max {
			fails = append(fails, fmt.Sprintf("RSS per session %.2f KiB exceeds %.2f KiB", res.RSSPerSession, max))
		}
	}
	if len(fails) > 0 {
		return cli.Exit(fmt.Sprintf("idle probe FAILED: %v", fails), 1)
	}
	return nil
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
			sources, err := mcload.ParseSources(c.String("sources"))
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
