package main

import (
	"errors"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/pausedcost"
)

// benchPausedCommand measures what held-back connections with no traffic
// cost `push` and the proxy against an idle server, as `bench drain` does
// for `serve`.
func benchPausedCommand() *cli.Command {
	return &cli.Command{
		Name:  "paused",
		Usage: "hold N connections back on `tidegate push` (stuck SSE subscribers) or a raw `tidegate proxy` (sessions toward a backend that never reads): CPU and wake-ups against idle",
		Description: "Each trial starts a fresh server, samples its CPU (schedstat) over --idle-window with no connection,\n" +
			"then holds --conns connections back with nothing moving and samples over --window; the servers'\n" +
			"order rotates each repeat. Push runs with --not-writable-timeout 0 so that nothing is aborted. Linux (/proc).",
		Flags: append([]cli.Flag{
			tidegateBinFlag(),
			&cli.StringFlag{Name: "target", Value: pausedcost.TargetPush, Usage: "push or proxy"},
			serverFlag(),
			&cli.IntFlag{Name: "conns", Value: 1000, Usage: "connections held back at once"},
			&cli.IntFlag{Name: "repeats", Value: 4, Usage: "trials per server, each on a fresh server"},
			&cli.IntFlag{Name: "loops", Value: 2, Usage: "the servers' loops (and GOMAXPROCS)"},
			&cli.DurationFlag{Name: "idle-window", Value: 5e9, Usage: "CPU sampling window with no connection"},
			&cli.DurationFlag{Name: "window", Value: 10e9, Usage: "CPU sampling window with every connection held back"},
			&cli.DurationFlag{Name: "settle", Value: 2e9, Usage: "pause before each sampling window"},
			&cli.IntFlag{Name: "event-size", Value: 64 << 10, Usage: "push: bytes of each event published to fill the subscribers"},
		}, logflags.Flags()...),
		Action: runBenchPaused,
	}
}

func runBenchPaused(c *cli.Context) error {
	log, err := flagsOnly(c, "paused")
	if err != nil {
		return err
	}
	servers, err := serverBuilds(c, func(label, bin string) pausedcost.Server { return pausedcost.Server{Label: label, Binary: bin} })
	if err != nil {
		return err
	}
	ctx, stop := sessionContext(c)
	defer stop()
	cfg := pausedcost.Config{Target: c.String("target"), Servers: servers, Conns: c.Int("conns"), Loops: c.Int("loops"),
		Repeats: c.Int("repeats"), IdleWindow: c.Duration("idle-window"), Window: c.Duration("window"),
		Settle: c.Duration("settle"), EventSize: c.Int("event-size"), Log: log}
	trials, runErr := pausedcost.Run(ctx, cfg)
	if err := pausedcost.WriteTables(os.Stdout, servers, trials); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil {
		return runErr
	}
	for _, t := range trials {
		if t.Error != "" {
			return failedExit("paused", []string{t.Server + ": " + t.Error})
		}
	}
	return nil
}
