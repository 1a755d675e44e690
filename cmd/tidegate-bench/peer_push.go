package main

import (
	"context"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/ssepeer"
)

// peerPushNetHTTPCommand runs the idiomatic net/http SSE push server, the
// peer of `tidegate push`.
func peerPushNetHTTPCommand() *cli.Command {
	return &cli.Command{
		Name:  "push-nethttp",
		Usage: "run the net/http SSE push server, a goroutine and a channel per subscriber (the peer of `tidegate push`)",
		Description: "Publishers send the publish frames of `tidegate push` (TLV type 1) to --publish-listen;\n" +
			"subscribers GET /events?topic=T on --subscribe-listen and receive Server-Sent Events. Each\n" +
			"subscriber has a goroutine and a channel of --buffer events and gets one Write and Flush per\n" +
			"event; a publisher that finds a subscriber's channel full disconnects that subscriber\n" +
			"instead of waiting. Its cores are set with the GOMAXPROCS environment variable. It runs\n" +
			"until interrupted (SIGINT or SIGTERM).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "publish-listen", Value: "127.0.0.1:7311", Usage: "address publishers connect to"},
			&cli.StringFlag{Name: "subscribe-listen", Value: "127.0.0.1:7312", Usage: "address SSE subscribers connect to"},
			&cli.IntFlag{Name: "buffer", Value: ssepeer.DefaultBuffer, Usage: "events each subscriber's channel holds before the subscriber is disconnected"},
			&cli.DurationFlag{Name: "heartbeat", Value: 15 * time.Second, Usage: "period of each subscriber's ping event; 0 disables"},
		}, logflags.Flags()...),
		Action: withLog(func(c *cli.Context, log zerolog.Logger) error {
			srv, err := ssepeer.New(ssepeer.Config{
				PublishAddr: c.String("publish-listen"), SubscribeAddr: c.String("subscribe-listen"),
				Buffer: c.Int("buffer"), Heartbeat: c.Duration("heartbeat"), Logger: log,
			})
			if err != nil {
				return err
			}
			srv.Start()
			log.Info().Str("publish", srv.PublishAddr().String()).Str("subscribe", srv.SubscribeAddr().String()).Msg("net/http SSE push server listening")
			return serveUntilSignal(c, log, nil, func(ctx context.Context) error {
				err := srv.Stop(ctx)
				st := srv.Stats()
				log.Info().Int64("published", st.Published).Int64("slow_closed", st.SlowClosed).Int64("bad_frames", st.BadFrames).Msg("net/http SSE push server stopped")
				return err
			})
		}),
	}
}
