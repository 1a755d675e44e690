package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/soak"
)

// benchSoakCommand runs the proxy under a mixed load for a long time and
// fails when a figure trends upward or a byte is lost.
func benchSoakCommand() *cli.Command {
	return &cli.Command{
		Name:  "soak",
		Usage: "`tidegate proxy` for --duration under steady players, churn, stalled readers and half-closes, with reloads, backend restarts and a live upgrade: fails on any figure trending upward or any byte lost",
		Description: "A `tidegate proxy` child (one Minecraft listener, --metrics-listen) in front of two `tidegate backend`\n" +
			"children on loopback: the steady players' address goes to one, never restarted; every other to the\n" +
			"churn backend. For --duration, --sessions sessions at once: steady players (a small PLAY frame\n" +
			"--rate times a second, every reply checked), and a tenth churn (log in, echo, hold, leave), a\n" +
			"twentieth stalled readers (a --stalled-burst left unread for --hold, then read and checked) and a\n" +
			"twentieth half-closes (a frame, SHUT_WR, the echo, the end of the stream). SIGHUP every\n" +
			"--reload-every (the configuration rewritten), the churn backend restarted every --restart-every,\n" +
			"one SIGUSR2 at --upgrade-at. Every --interval: the proxy's RSS, descriptors and threads (/proc),\n" +
			"live heap, goroutines and tidegate_buffer_queued_bytes (/metrics) and the churn latency's p99.\n\n" +
			"It exits non-zero when a figure's least-squares line over a process's samples after --warmup\n" +
			"grows by more than its tolerance (stated in the report) with t >= 3, when a byte was lost or\n" +
			"wrong, a short-lived session failed outside a backend restart, or an event did not take effect.\n" +
			"This process needs 2 descriptors per session and the proxy 2 + a reserve: the soft RLIMIT_NOFILE\n" +
			"is raised to the hard one and a --sessions that does not fit is refused. A short-lived session\n" +
			"connects again only once the server has ended its last one (SHUT_WR, then the end of the stream), so\n" +
			"--sessions is what the server holds at once; its descriptor budget pausing accepting, or refusing a\n" +
			"metrics connection, fails the run. --server serve and --server push soak those servers under their\n" +
			"own clients, sampled and tested the same way. Linux (/proc).",
		Flags: append([]cli.Flag{
			tidegateBinFlag(),
			&cli.StringFlag{Name: "server", Value: soak.ServerProxy, Usage: "the server soaked: proxy, serve (steady pipelined TLV clients, sha256 per connection, churn, stalled readers, half-closes) or push (a publisher, steady TCP subscribers, churn and slow subscribers); serve and push have no reload, restart or upgrade"},
			&cli.DurationFlag{Name: "duration", Value: soak.DefaultDuration, Usage: "how long the load runs"},
			&cli.IntFlag{Name: "sessions", Value: soak.DefaultSessions, Usage: "sessions open at once (2 descriptors each here and in the proxy)"},
			&cli.DurationFlag{Name: "interval", Value: soak.DefaultInterval, Usage: "how often the proxy is sampled"},
			&cli.DurationFlag{Name: "warmup", Usage: "samples left out of the slope test after the start and after the upgrade", DefaultText: "the lesser of 5m and a sixth of --duration"},
			&cli.IntFlag{Name: "churn", Usage: "churn sessions among --sessions", DefaultText: "a tenth"},
			&cli.IntFlag{Name: "stalled", Usage: "stalled readers among --sessions", DefaultText: "a twentieth"},
			&cli.IntFlag{Name: "half-close", Usage: "half-closing sessions among --sessions", DefaultText: "a twentieth"},
			&cli.IntFlag{Name: "stalled-burst", Value: soak.DefaultStalledBurst, Usage: "bytes each stalled reader sends and leaves unread (several MiB make the proxy queue them; the default stays in kernel buffers)"},
			&cli.IntFlag{Name: "rate", Value: soak.DefaultRate, Usage: "frames a second each steady player sends"},
			&cli.DurationFlag{Name: "hold", Value: soak.DefaultHold, Usage: "a short-lived session's cycle: a stalled reader's stall, a churn worker's period"},
			&cli.DurationFlag{Name: "reload-every", Value: soak.DefaultReloadEvery, Usage: "how often SIGHUP is sent"},
			&cli.DurationFlag{Name: "restart-every", Value: soak.DefaultRestartEvery, Usage: "how often the churn backend is restarted"},
			&cli.DurationFlag{Name: "upgrade-at", Usage: "when the one SIGUSR2 is sent (negative: none)", DefaultText: "half of --duration"},
			&cli.IntFlag{Name: "loops", Value: soak.DefaultLoops, Usage: "the proxy's event loops"},
			&cli.StringFlag{Name: "log-dir", Usage: "keep the proxy's configuration and logs in `DIR`", DefaultText: "a temporary directory, removed after a run that passed"},
		}, append(resultsFlags("soak"), logflags.Flags()...)...),
		Action: runBenchSoak,
	}
}

func runBenchSoak(c *cli.Context) error {
	log, exe, ctx, stop, err := binaryBench(c, "soak")
	if err != nil {
		return err
	}
	defer stop()
	cfg := soak.Config{
		Executable: exe, Server: c.String("server"), Duration: c.Duration("duration"), Interval: c.Duration("interval"), Warmup: c.Duration("warmup"),
		Sessions: c.Int("sessions"), Churn: c.Int("churn"), Stalled: c.Int("stalled"), HalfClose: c.Int("half-close"),
		Rate: c.Int("rate"), StalledBurst: c.Int("stalled-burst"), Hold: c.Duration("hold"), ReloadEvery: c.Duration("reload-every"), RestartEvery: c.Duration("restart-every"),
		UpgradeAt: c.Duration("upgrade-at"), Loops: c.Int("loops"), Dir: c.String("log-dir"), Log: log,
	}
	started := time.Now().UTC()
	res, err := soak.Run(ctx, cfg)
	if err != nil {
		return err
	}
	res.Meta = binaryMeta(started, exe)
	tables := harness.Sections(soak.WriteTrends, soak.WriteSessions, soak.WriteEvents)
	if err := printAndWrite(c, log, res, soak.WriteJSON, tables, soak.WriteReport); err != nil {
		return err
	}
	if !res.OK {
		return failedExit("soak", res.Failures)
	}
	return nil
}
