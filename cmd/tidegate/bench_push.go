package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/benchmarks/pushload"
)

// benchPushCommand is the push server's end-to-end load generator.
func benchPushCommand() *cli.Command {
	return &cli.Command{
		Name:  "push",
		Usage: "publish at a fixed rate to a running `tidegate push` and count deliveries on event-loop subscribers",
		Description: "One publisher sends sequence-numbered events at --rate; --subscribers TCP subscribers (gnet\n" +
			"client, legacy framing) count deliveries and check the order. Prints events delivered per\n" +
			"second and the server's CPU time per delivered event (from /proc/PID/stat with --server-pid,\n" +
			"otherwise this process' own CPU time). Repeats print one line each.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "publish", Value: "127.0.0.1:7301", Usage: "the server's publish address"},
			&cli.StringFlag{Name: "subscribe", Value: "127.0.0.1:7302", Usage: "the server's subscribe address"},
			&cli.IntFlag{Name: "subscribers", Value: 1000, Usage: "TCP subscribers"},
			&cli.StringFlag{Name: "topic", Value: "load", Usage: "topic to publish and subscribe to"},
			&cli.IntFlag{Name: "rate", Value: 200, Usage: "events published per second"},
			&cli.IntFlag{Name: "events-per-frame", Value: 10, Usage: "most events per publish frame"},
			&cli.IntFlag{Name: "payload", Value: 512, Usage: "event size in bytes (>= 8)"},
			&cli.DurationFlag{Name: "warmup", Value: time.Second, Usage: "publishing before the measurement"},
			&cli.DurationFlag{Name: "duration", Value: 5 * time.Second, Usage: "measured time"},
			&cli.DurationFlag{Name: "drain", Value: 3 * time.Second, Usage: "longest wait for the last deliveries"},
			&cli.IntFlag{Name: "server-pid", Usage: "the server's process id, for its CPU time"},
			&cli.IntFlag{Name: "client-loops", Value: 1, Usage: "event loops of the subscribers' client"},
			&cli.IntFlag{Name: "repeats", Value: 1, Usage: "runs, each with fresh subscribers"},
		}, logFlags()...),
		Action: func(c *cli.Context) error {
			log, err := newLogger(c)
			if err != nil {
				return err
			}
			cfg := pushload.Config{
				PublishAddr: c.String("publish"), SubscribeAddr: c.String("subscribe"),
				Subscribers: c.Int("subscribers"), Topic: c.String("topic"), Rate: c.Int("rate"),
				EventsPerFrame: c.Int("events-per-frame"), PayloadSize: c.Int("payload"),
				Warmup: c.Duration("warmup"), Duration: c.Duration("duration"), Drain: c.Duration("drain"),
				ServerPID: c.Int("server-pid"), ClientLoops: c.Int("client-loops"), Logger: log,
			}
			for i := 0; i < c.Int("repeats"); i++ {
				r, err := pushload.Run(c.Context, cfg)
				if err != nil {
					return fmt.Errorf("bench push run %d: %w", i+1, err)
				}
				fmt.Fprintf(c.App.Writer, "run=%d %s\n", i+1, r)
			}
			return nil
		},
	}
}
