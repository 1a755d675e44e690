package main

import (
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"

	"github.com/tidegate/tidegate/benchmarks/peers"
)

// peerGoproxyCommand runs Go's idiomatic io.Copy relay, the peer of
// `tidegate proxy` in raw mode.
func peerGoproxyCommand() *cli.Command {
	return &cli.Command{
		Name:  "goproxy",
		Usage: "run the goroutine-per-direction io.Copy TCP relay (the peer of `tidegate proxy`)",
		Description: "Relays every accepted connection to --backend with one goroutine per direction\n" +
			"running io.Copy (splice on Linux), half-closing on a clean end and closing both sides\n" +
			"on an error. Its cores are set with the GOMAXPROCS environment variable. It runs until\n" +
			"interrupted (SIGINT or SIGTERM).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:25578", Usage: "listen address"},
			&cli.StringFlag{Name: "backend", Value: "127.0.0.1:25565", Usage: "address every connection is relayed to"},
			&cli.DurationFlag{Name: "connect-timeout", Value: peers.DefaultGoRelayDialTimeout, Usage: "backend connect timeout"},
		}, logflags.Flags()...),
		Action: withLog(func(c *cli.Context, log zerolog.Logger) error {
			r := &peers.GoRelay{Backend: c.String("backend"), DialTimeout: c.Duration("connect-timeout")}
			if err := r.Listen(c.String("listen")); err != nil {
				return err
			}
			log.Info().Str("listen", r.Addr().String()).Str("backend", r.Backend).Msg("goproxy relaying")
			err := serveListener(c, log, r.Serve, r.Close)
			st := r.Stats()
			log.Info().Int64("accepted", st.Accepted).Int64("connect_failed", st.ConnectFailed).Msg("goproxy stopped")
			return err
		}),
	}
}
