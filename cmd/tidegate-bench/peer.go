package main

import (
	"time"

	"github.com/tidegate/tidegate/benchmarks/goserver"
	"github.com/tidegate/tidegate/protocol/tlv"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"
)

// peerCommand groups the servers tidegate is measured against.
func peerCommand() *cli.Command {
	return &cli.Command{
		Name:  "peer",
		Usage: "run a peer server that tidegate is benchmarked against",
		Subcommands: []*cli.Command{
			peerTLVGoroutineCommand(),
			peerGoproxyCommand(),
			peerPushNetHTTPCommand(),
		},
	}
}

func peerTLVGoroutineCommand() *cli.Command {
	return &cli.Command{
		Name:  "tlv-goroutine",
		Usage: "run the goroutine-per-connection TLV echo server (the peer of `tidegate serve`)",
		Description: "The idiomatic Go design: one goroutine per connection, a bufio reader and writer each,\n" +
			"responses flushed when no more input is buffered. Same protocol and semantics as\n" +
			"`tidegate serve`. Its cores are set with the GOMAXPROCS environment variable.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7310", Usage: "listen address"},
			&cli.IntFlag{Name: "type-width", Value: 1, Usage: "bytes of the type field: 1 or 2"},
			&cli.IntFlag{Name: "length-width", Value: 4, Usage: "bytes of the length field: 2 or 4"},
			&cli.IntFlag{Name: "max-body", Value: 1 << 20, Usage: "largest request body accepted, in bytes"},
			&cli.IntFlag{Name: "buffer", Value: goserver.DefaultBufferSize, Usage: "bytes of each connection's reader and writer"},
			&cli.DurationFlag{Name: "idle-timeout", Value: 5 * time.Minute, Usage: "close connections idle this long (0: never)"},
		}, logflags.Flags()...),
		Action: withLog(func(c *cli.Context, log zerolog.Logger) error {
			f, err := tlv.NewFormat(c.Int("type-width"), c.Int("length-width"), c.Int("max-body"))
			if err != nil {
				return err
			}
			srv, err := goserver.New(goserver.Config{
				Addr: c.String("listen"), Format: f, BufferSize: c.Int("buffer"),
				IdleTimeout: c.Duration("idle-timeout"), Logger: log,
			})
			if err != nil {
				return err
			}
			if err := srv.Start(); err != nil {
				return err
			}
			log.Info().Str("listen", srv.Addr().String()).Msg("goroutine-per-connection TLV server listening")
			return serveUntilSignal(c, log, nil, srv.Stop)
		}),
	}
}
