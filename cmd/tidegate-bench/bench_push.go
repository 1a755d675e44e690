package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/pushload"
)

// benchPushCommand is the push server's end-to-end load generator.
func benchPushCommand() *cli.Command {
	return &cli.Command{
		Name:  "push",
		Usage: "publish at a fixed rate to a running `tidegate push` and count deliveries on event-loop subscribers",
		Description: "One publisher sends sequence-numbered events at --rate; --subscribers TCP subscribers (gnet\n" +
			"client, legacy framing) count deliveries and check the order. Prints events delivered per\n" +
			"second and the server's CPU time per delivered event (schedstat nanoseconds of --server-pid's\n" +
			"threads, otherwise this process' own CPU time). Repeats print one line each. It exits\n" +
			"non-zero when a subscriber lost, got twice or got out of order an event, or the run was\n" +
			"interrupted (SIGINT, SIGTERM: no partial result).\n\n" +
			"With --stuck N, N SSE subscribers of the same topic also connect and never read, and the\n" +
			"run measures the server's memory per stuck subscriber from its --server-metrics listener\n" +
			"(live heap after forced GCs, heap in use, RSS, peak RSS): publishing goes on until the\n" +
			"server drops at least 90% of what it owes them (at most --fill-timeout), then for\n" +
			"--duration more, then memory is read. It exits non-zero too if the stuck subscribers did\n" +
			"not saturate or were closed before the reading, or a figure per stuck subscriber passed\n" +
			"--max-bytes-per-stuck.\n\n" +
			"With --compare, it starts the servers itself, each a child process for every trial: `tidegate\n" +
			"push` (--tidegate-bin, --window) and the net/http SSE peer (`tidegate-bench peer push-nethttp`,\n" +
			"--peer-buffer), for each of --subscribers-list, --repeats times, the order of the two servers\n" +
			"swapped every repeat. Subscribers are SSE streams; events carry their publish time, for the\n" +
			"publish-to-delivery latency. Prints every trial and the medians [min–max] with the ratios\n" +
			"tidegate/nethttp as Markdown: deliveries/s, server CPU ns per delivered event, deliveries per\n" +
			"server CPU-second, RSS per subscriber (connected, and at the end of the measurement while\n" +
			"publishing, less the RSS before any subscriber), p50/p99 latency, and the events each server\n" +
			"dropped or lost. It exits non-zero if any trial lost, duplicated or reordered an event, or a\n" +
			"server dropped some (reported, or a subscriber it closed) without --allow-drops.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "publish", Value: "127.0.0.1:7301", Usage: "the server's publish address"},
			&cli.StringFlag{Name: "subscribe", Value: "127.0.0.1:7302", Usage: "the server's subscribe address"},
			&cli.IntFlag{Name: "subscribers", Value: 1000, Usage: "TCP subscribers that read and count everything"},
			&cli.StringFlag{Name: "topic", Value: "load", Usage: "topic to publish and subscribe to"},
			&cli.IntFlag{Name: "rate", Value: 200, Usage: "events published per second"},
			&cli.IntFlag{Name: "events-per-frame", Value: 10, Usage: "most events per publish frame"},
			&cli.IntFlag{Name: "payload", Value: 512, Usage: "event size in bytes (>= 8)"},
			&cli.DurationFlag{Name: "warmup", Value: time.Second, Usage: "publishing before the measurement"},
			&cli.DurationFlag{Name: "duration", Value: 5 * time.Second, Usage: "measured time; with --stuck, publishing after saturation before memory is read"},
			&cli.DurationFlag{Name: "drain", Value: 3 * time.Second, Usage: "longest wait for the last deliveries"},
			&cli.IntFlag{Name: "server-pid", Usage: "the server's process id, for its CPU time"},
			&cli.IntFlag{Name: "client-loops", Value: 1, Usage: "event loops of the subscribers' client"},
			&cli.IntFlag{Name: "repeats", Value: 1, Usage: "runs, each with fresh subscribers"},
			&cli.IntFlag{Name: "stuck", Usage: "`N` SSE subscribers that never read: measure the server's memory per stuck subscriber (needs --server-metrics)"},
			&cli.IntFlag{Name: "stuck-rcvbuf", Value: 4096, Usage: "SO_RCVBUF `BYTES` of the stuck subscribers, so that the kernel holds little for them; 0 keeps the default"},
			&cli.StringFlag{Name: "server-metrics", Usage: "the server's --metrics-listen `URL` (http://host:port; start it with --pprof), read for memory and counters with --stuck"},
			&cli.DurationFlag{Name: "fill-timeout", Value: time.Minute, Usage: "with --stuck, the longest wait until the stuck subscribers drop what they are sent"},
			&cli.Int64Flag{Name: "max-bytes-per-stuck", Usage: "with --stuck, fail if live heap, RSS or peak RSS grew by more than `BYTES` per stuck subscriber (0: no gate)"},
			&cli.BoolFlag{Name: "sse", Usage: "SSE subscribers (GET /events) instead of TCP ones; events carry their publish time and the run reports latency"},
			&cli.BoolFlag{Name: "allow-drops", Usage: "with SSE subscribers, accept events the server dropped or missed by subscribers it closed (still counted)"},
			&cli.BoolFlag{Name: "compare", Usage: "start tidegate push and the net/http SSE peer per trial and compare them (see above)"},
			&cli.IntSliceFlag{Name: "subscribers-list", Value: cli.NewIntSlice(1000, 5000, 9000), Usage: "with --compare, the subscriber counts"},
			&cli.DurationFlag{Name: "window", Value: 200 * time.Millisecond, Usage: "with --compare, tidegate push's --window"},
			&cli.IntFlag{Name: "peer-buffer", Usage: "with --compare, the peer's --buffer (events per subscriber channel; 0: its default)"},
			tidegateBinFlag(),
		}, logflags.Flags()...),
		Action: withLog(func(c *cli.Context, log zerolog.Logger) error {
			cfg := pushload.Config{
				PublishAddr: c.String("publish"), SubscribeAddr: c.String("subscribe"),
				Subscribers: c.Int("subscribers"), Topic: c.String("topic"), Rate: c.Int("rate"),
				EventsPerFrame: c.Int("events-per-frame"), PayloadSize: c.Int("payload"),
				Warmup: c.Duration("warmup"), Duration: c.Duration("duration"), Drain: c.Duration("drain"),
				ServerPID: c.Int("server-pid"), ClientLoops: c.Int("client-loops"), Logger: log,
				SSE: c.Bool("sse"), AllowDrops: c.Bool("allow-drops"),
			}
			ctx, stop := sessionContext(c)
			defer stop()
			if c.Bool("compare") {
				return benchPushCompare(ctx, c, cfg)
			}
			for i := 0; i < c.Int("repeats"); i++ {
				if c.Int("stuck") > 0 {
					r, err := pushload.Stuck(ctx, pushload.StuckConfig{
						Load: cfg, Stuck: c.Int("stuck"), StuckRcvBuf: c.Int("stuck-rcvbuf"),
						MetricsURL: c.String("server-metrics"), FillTimeout: c.Duration("fill-timeout"),
						Steady: cfg.Duration, MaxBytesPerStuck: c.Int64("max-bytes-per-stuck"),
					})
					fmt.Fprintf(c.App.Writer, "run=%d %s\n", i+1, r) // what was measured, also on failure
					if err != nil {
						return cli.Exit(fmt.Sprintf("bench push run %d FAILED: %v", i+1, err), 1)
					}
					continue
				}
				r, err := pushload.Run(ctx, cfg)
				if r.TotalPublished > 0 {
					fmt.Fprintf(c.App.Writer, "run=%d %s\n", i+1, r) // what was measured, also on failure
				}
				if err != nil {
					return cli.Exit(fmt.Sprintf("bench push run %d FAILED: %v", i+1, err), 1)
				}
			}
			return nil
		}),
	}
}

// benchPushCompare runs --compare: tidegate push against the net/http peer.
func benchPushCompare(ctx context.Context, c *cli.Context, load pushload.Config) error {
	tg, err := tidegateBinary(c)
	if err != nil {
		return err
	}
	self, err := thisProgram("the net/http SSE peer")
	if err != nil {
		return err
	}
	cfg := pushload.CompareConfig{
		Load: load, Subscribers: c.IntSlice("subscribers-list"), Repeats: c.Int("repeats"),
		Servers: []pushload.Server{pushload.Tidegate, pushload.NetHTTP}, TidegateBin: tg, PeerBin: self,
		Window: c.Duration("window"), PeerBuffer: c.Int("peer-buffer"),
	}
	w := c.App.Writer
	fmt.Fprintf(w, "command: `%s`\nrevision: %s\n\n", commandLine(os.Args), toolRevision())
	trials, err := pushload.Compare(ctx, cfg)
	if len(trials) > 0 {
		if werr := pushload.WriteSummary(w, pushload.Summarize(trials, cfg.Subscribers, cfg.Servers)); werr != nil {
			return werr
		}
		fmt.Fprintln(w, "\nEvery trial:")
		fmt.Fprintln(w)
		if werr := pushload.WriteTrials(w, trials); werr != nil {
			return werr
		}
	}
	if err != nil {
		return cli.Exit(fmt.Sprintf("bench push --compare FAILED: %v", err), 1)
	}
	if err := pushload.Failed(trials); err != nil {
		return cli.Exit(fmt.Sprintf("bench push --compare FAILED: %v", err), 1)
	}
	return nil
}
