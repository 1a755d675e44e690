package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/upgradeload"
)

// benchUpgradeCommand measures a live upgrade (SIGUSR2) of a proxy child
// relaying N echoing sessions.
func benchUpgradeCommand() *cli.Command {
	return &cli.Command{
		Name:  "upgrade",
		Usage: "SIGUSR2 to a `tidegate proxy` relaying N echoing sessions: hand-over time, every session's longest echo gap against a baseline, every echo checked",
		Description: "For each repeat a fresh `tidegate proxy` child is started (raw listener, one backend group,\n" +
			"max_sessions 0, idle_timeout 0s, drain_timeout 60s, 2 loops, --metrics-listen, logs at info in JSON\n" +
			"to a file that is kept) in front of an echo backend in this process. --sessions sessions each send\n" +
			"a 16-byte sequence-numbered message every --interval and check every echo. After --warmup and a\n" +
			"--baseline window the proxy gets SIGUSR2; the upgrade window lasts until the old process has\n" +
			"exited and --settle more. Reported: the hand-over time (signal until the old process exits) and\n" +
			"the old process's own figure from its log, and over the sessions the max, p99 and median of each\n" +
			"one's longest gap between two echoes in the upgrade window and in the baseline. The new process\n" +
			"(pid from GET /healthz on the metrics address) must serve a new session, and is stopped with\n" +
			"SIGTERM once the sessions are closed and waited for.\n\n" +
			"It exits non-zero when an echo was lost, duplicated, reordered or corrupted, a session ended or\n" +
			"errored, the old process did not exit 0, no new process answered or served, it did not stop, or\n" +
			"the proxy logged an error. This process needs 2 descriptors per session and the proxy 2 + a\n" +
			"reserve: the soft RLIMIT_NOFILE is raised to the hard one and a --sessions that does not fit is\n" +
			"refused. Linux (a child subreaper reaps the new process; /proc for CPU figures).",
		Flags: append([]cli.Flag{
			tidegateBinFlag(),
			&cli.IntFlag{Name: "sessions", Value: upgradeload.DefaultSessions, Usage: "sessions through the proxy (2 descriptors each here, 2 in the proxy)"},
			&cli.DurationFlag{Name: "interval", Value: upgradeload.DefaultInterval, Usage: "how often each session sends a message"},
			&cli.IntFlag{Name: "repeats", Value: upgradeload.DefaultRepeats, Usage: "trials, each on a fresh proxy"},
			&cli.DurationFlag{Name: "warmup", Value: upgradeload.DefaultWarmup, Usage: "sending before the baseline window"},
			&cli.DurationFlag{Name: "baseline", Value: upgradeload.DefaultBaseline, Usage: "the steady window before the signal"},
			&cli.DurationFlag{Name: "settle", Usage: "how long the upgrade window lasts after the old process exited", DefaultText: "the greater of 1s and 5 intervals"},
			&cli.IntFlag{Name: "loops", Value: upgradeload.DefaultLoops, Usage: "the proxy's event loops"},
			&cli.IntFlag{Name: "connect-parallel", Value: upgradeload.DefaultConnectParallel, Usage: "sessions dialed at once"},
			&cli.IntFlag{Name: "writers", Value: upgradeload.DefaultWriters, Usage: "goroutines sending the sessions' messages"},
			&cli.DurationFlag{Name: "upgrade-timeout", Value: upgradeload.DefaultUpgradeTimeout, Usage: "longest wait from the signal to the old process's exit"},
			&cli.DurationFlag{Name: "echo-timeout", Value: upgradeload.DefaultEchoTimeout, Usage: "longest wait for the last echoes once sending stopped, and for the new-session check"},
			&cli.DurationFlag{Name: "quiet-wait", Value: upgradeload.DefaultQuietWait, Usage: "how long each trial may wait for the machine to be quiet first (0: no wait)"},
			&cli.Float64Flag{Name: "quiet-cpu", Value: upgradeload.DefaultQuietCPU, Usage: "quiet: the machine busy under this percent of one core"},
			&cli.IntFlag{Name: "noisy-retries", Value: upgradeload.DefaultNoisyRetries, Usage: "times a trial runs again when other programs used more than twice --quiet-cpu in one of its windows"},
			&cli.DurationFlag{Name: "health-poll-during", Usage: "poll /healthz this often from the signal on", DefaultText: "only once the old process has exited, so that no connection reaches the listeners while they are handed over"},
			&cli.StringFlag{Name: "log-dir", Usage: "keep each trial's proxy configuration and log in `DIR`/trial-N", DefaultText: "a new temporary directory, kept"},
		}, append(resultsFlags("upgrade"), logflags.Flags()...)...),
		Action: runBenchUpgrade,
	}
}

func runBenchUpgrade(c *cli.Context) error {
	log, exe, ctx, stop, err := binaryBench(c, "upgrade")
	if err != nil {
		return err
	}
	defer stop()
	cfg := upgradeload.Config{
		Executable: exe, Sessions: c.Int("sessions"), Interval: c.Duration("interval"), Repeats: c.Int("repeats"),
		Warmup: c.Duration("warmup"), Baseline: c.Duration("baseline"), Settle: c.Duration("settle"), Loops: c.Int("loops"),
		ConnectParallel: c.Int("connect-parallel"), Writers: c.Int("writers"), UpgradeTimeout: c.Duration("upgrade-timeout"),
		EchoTimeout: c.Duration("echo-timeout"), QuietWait: c.Duration("quiet-wait"), QuietCPU: c.Float64("quiet-cpu"), NoisyRetries: c.Int("noisy-retries"), HealthPollDuring: c.Duration("health-poll-during"),
		Dir: c.String("log-dir"), Log: log,
	}
	started := time.Now().UTC()
	res, err := upgradeload.Run(ctx, cfg)
	if err != nil {
		return err
	}
	res.Meta = binaryMeta(started, exe)
	tables := harness.Sections(upgradeload.WriteTable, upgradeload.WriteTrials)
	if err := printAndWrite(c, log, res, upgradeload.WriteJSON, tables, upgradeload.WriteReport); err != nil {
		return err
	}
	if !res.OK {
		return failedExit("upgrade", res.Failures)
	}
	return nil
}
