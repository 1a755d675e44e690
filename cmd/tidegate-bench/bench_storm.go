package main

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/echo"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/sockopt"
	"github.com/tidegate/tidegate/benchmarks/storm"
)

// benchStormCommand holds sessions through a connection storm past the
// proxies' session and descriptor limits.
func benchStormCommand() *cli.Command {
	return &cli.Command{
		Name:  "storm",
		Usage: "hold N sessions and fire a connection storm past the session and descriptor limits: lost sessions, refusals, accept latency, survival",
		Description: "For each repeat and each --targets proxy (the order rotated by one each repeat) a fresh\n" +
			"proxy is started in raw TCP mode in front of one echo backend (its own process), with the\n" +
			"session limit --limit (tidegate limits.max_sessions, HAProxy maxconn, nginx limit_conn) and\n" +
			"the descriptor limit --nofile (prlimit --nofile=N:N). --held sessions are opened and echo a\n" +
			"checked message every --held-interval throughout; then --storm connections are fired at\n" +
			"once, each connecting and waiting for the echo of a checked message within --storm-timeout:\n" +
			"accepted, refused (connect refused, reset or closed first) or timed out. Accept latency is\n" +
			"connect start to the first echoed byte of the accepted ones. After the storm the proxy must\n" +
			"still run and serve a new session within --after-timeout. Figures are median [min–max]\n" +
			"over the repeats; the proxy's CPU comes from /proc/PID/task/*/schedstat.\n\n" +
			"It exits non-zero when a held session was lost, a proxy died or stopped serving, a storm\n" +
			"connection errored (wrong echo, client fault) or a trial could not run.",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "held", Value: storm.DefaultHeld, Usage: "sessions opened before the storm that must survive it, each echoing throughout"},
			&cli.IntFlag{Name: "storm", Value: storm.DefaultStorm, Usage: "connections fired in the storm"},
			&cli.IntFlag{Name: "limit", Value: storm.DefaultLimit, Usage: "concurrent-session limit of every proxy (more than --held)"},
			&cli.IntFlag{Name: "nofile", Value: storm.DefaultNoFile, Usage: "descriptor limit of every proxy process, soft and hard (0: unchanged); a session takes two"},
			&cli.IntFlag{Name: "repeats", Value: storm.DefaultRepeats, Usage: "trials per target, each on a fresh proxy"},
			&cli.StringFlag{Name: "targets", Aliases: []string{"target"}, Value: "tidegate-raw,haproxy,nginx",
				Usage: "proxies, comma-separated: tidegate-raw, haproxy, haproxy-splice, nginx (all in raw TCP mode)"},
			&cli.IntFlag{Name: "proxy-cores", Value: 1, Usage: "threads/loops/workers of every proxy"},
			&cli.StringFlag{Name: "sources", Value: "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4", Usage: "local source addresses the client's connections are spread over, comma-separated"},
			&cli.IntFlag{Name: "storm-parallel", Usage: "storm connections in progress at once (0: all fired together)"},
			&cli.DurationFlag{Name: "storm-timeout", Value: storm.DefaultStormTimeout, Usage: "deadline of each storm connection, from connect start to the complete echo"},
			&cli.IntFlag{Name: "held-parallel", Value: storm.DefaultHeldParallel, Usage: "held sessions opened at once before the storm"},
			&cli.DurationFlag{Name: "held-interval", Value: storm.DefaultHeldInterval, Usage: "pause between two echoes of a held session"},
			&cli.DurationFlag{Name: "echo-timeout", Value: storm.DefaultEchoTimeout, Usage: "deadline of each held echo (a late echo loses the session) and each new-session attempt"},
			&cli.DurationFlag{Name: "after-timeout", Value: storm.DefaultAfterTimeout, Usage: "how long a new session after the storm may take to be served, retries included"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON instead of a table"},
			&cli.StringFlag{Name: "out", Usage: "write DATE-storm[-LABEL].md (command, machine, revision, tables) and its .json into `DIR`"},
			&cli.StringFlag{Name: "label", Usage: "suffix of the results file name, such as before or after"},
			haproxyBinFlag(),
			nginxBinFlag(),
			&cli.StringFlag{Name: "prlimit-bin", Value: "prlimit", Usage: "prlimit program (util-linux) that applies --nofile"},
			tidegateBinFlag(),
		}, logflags.Flags()...),
		Subcommands: []*cli.Command{benchStormEchoCommand()},
		Action:      runBenchStorm,
	}
}

func runBenchStorm(c *cli.Context) error {
	log, err := flagsOnly(c, "storm")
	if err != nil {
		return err
	}
	kinds, err := peers.ParseKinds(c.String("targets"))
	if err != nil {
		return fmt.Errorf("--targets: %w", err)
	}
	sources, err := sockopt.ParseSources(c.String("sources"))
	if err != nil {
		return fmt.Errorf("--sources: %w", err)
	}
	for _, k := range kinds {
		switch k {
		case peers.KindTidegate, peers.KindGoproxy:
			return fmt.Errorf("--targets %s: the storm runs in raw TCP mode; use tidegate-raw, haproxy, haproxy-splice or nginx", k)
		case peers.KindHAProxy, peers.KindHAProxySplice:
			if _, err := exec.LookPath(c.String("haproxy-bin")); err != nil {
				return fmt.Errorf("--targets %s: %w (apt-get install haproxy)", k, err)
			}
		case peers.KindNginx:
			if _, err := exec.LookPath(c.String("nginx-bin")); err != nil {
				return fmt.Errorf("--targets %s: %w (apt-get install nginx libnginx-mod-stream)", k, err)
			}
		}
	}
	if c.Int("nofile") > 0 {
		if _, err := exec.LookPath(c.String("prlimit-bin")); err != nil {
			return fmt.Errorf("--nofile %d needs prlimit: %w", c.Int("nofile"), err)
		}
	}
	exe, err := thisProgram("the echo backend")
	if err != nil {
		return err
	}
	var tg string
	if slices.Contains(kinds, peers.KindTidegateRaw) {
		if tg, err = tidegateBinary(c); err != nil {
			return err
		}
	}
	ctx, stop := sessionContext(c)
	defer stop()

	backendAddr, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		return err
	}
	backend, err := harness.Start(ctx, harness.ChildSpec{Name: "echo-backend", Listen: backendAddr,
		Argv: []string{exe, "bench", "storm", "echo-backend", "--listen", backendAddr, "--log-level", "warn"}})
	if err != nil {
		return err
	}
	defer backend.Stop()

	cfg := storm.Config{
		Targets: kinds, Repeats: c.Int("repeats"), Held: c.Int("held"), Storm: c.Int("storm"), Limit: c.Int("limit"),
		NoFile: c.Int("nofile"), ProxyCores: c.Int("proxy-cores"), Backend: backendAddr, Sources: sources,
		StormParallel: c.Int("storm-parallel"), StormTimeout: c.Duration("storm-timeout"), HeldParallel: c.Int("held-parallel"),
		HeldInterval: c.Duration("held-interval"), EchoTimeout: c.Duration("echo-timeout"), AfterTimeout: c.Duration("after-timeout"),
		Executable: tg, HAProxy: c.String("haproxy-bin"), Nginx: c.String("nginx-bin"), Prlimit: c.String("prlimit-bin"),
		Log: log,
	}
	started := time.Now().UTC()
	log.Info().Strs("targets", strings.Split(c.String("targets"), ",")).Int("held", cfg.Held).Int("storm", cfg.Storm).
		Int("limit", cfg.Limit).Int("nofile", cfg.NoFile).Int("repeats", cfg.Repeats).Str("backend", backendAddr).
		Msg("storm benchmark starting")
	res, runErr := storm.Run(ctx, cfg)
	if res == nil {
		return runErr
	}
	runErr = errors.Join(runErr, stopEchoBackend(backend))
	res.Meta = runMeta(started)
	if err := printAndWrite(c, log, res, storm.WriteJSON, storm.WriteTable, storm.WriteReport); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if !res.OK {
		return failedExit("storm", res.Failures)
	}
	return nil
}

// stopEchoBackend stops the storm's echo backend and says what went wrong
// with it: it exited during the run, did not stop, or stopped with a
// failure (echo-backend exits non-zero when it ran out of descriptors or
// stopped accepting).
func stopEchoBackend(backend *harness.Child) error {
	if !backend.Running() {
		return fmt.Errorf("the echo backend exited during the run: %v\n%s", backend.ExitError(), backend.LogTail())
	}
	if err := backend.Stop(); err != nil {
		return fmt.Errorf("echo backend: %w", err)
	}
	if err := backend.ExitError(); err != nil {
		return fmt.Errorf("the echo backend failed (it ran out of descriptors or stopped accepting: the storm's refusals may be its own, not the proxy's): %w", err)
	}
	return nil
}

// benchStormEchoCommand is the storm's echo backend process.
func benchStormEchoCommand() *cli.Command {
	return &cli.Command{
		Name:   "echo-backend",
		Usage:  "internal: the echo backend of `tidegate-bench bench storm` (echoes every byte, a goroutine per connection)",
		Hidden: true,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:0", Usage: "listen address"},
		}, logflags.Flags()...),
		Action: withLog(func(c *cli.Context, log zerolog.Logger) error {
			var srv echo.Server
			if err := srv.Listen(c.String("listen")); err != nil {
				return err
			}
			log.Info().Str("listen", srv.Addr().String()).Msg("storm echo backend listening")
			err := serveListener(c, log, srv.Serve, srv.Close)
			log.Info().Int64("accepted", srv.Accepted()).Msg("storm echo backend stopped")
			// An accept that ran out of descriptors was retried, but the
			// storm's refusals were then the backend's, not the proxy's: the
			// non-zero exit tells the storm (stopEchoBackend).
			return errors.Join(err, srv.Failure())
		}),
	}
}
