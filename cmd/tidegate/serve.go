package main

import (
	"runtime"
	"strings"
	"time"

	"github.com/tidegate/tidegate/internal/lifecycle"
	"github.com/tidegate/tidegate/protocol/tlv"
	"github.com/tidegate/tidegate/session/tlvserver"

	"github.com/urfave/cli/v2"
)

func serveCommand(proc *lifecycle.Process) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the TLV request/response server (echo)",
		Description: "Answers each TLV request (type byte, big-endian length, body) with a response of the same\n" +
			"type and body, in order, one batched write per read. A request without the keep-alive bit\n" +
			"(the type's high bit) is answered and then the connection is closed. A bad frame gets an\n" +
			"error frame (type 0x7F) with the reason, then the connection is closed.",
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7300", Usage: "listen address(es), comma-separated"},
			&cli.IntFlag{Name: "type-width", Value: 1, Usage: "bytes of the type field: 1 or 2"},
			&cli.IntFlag{Name: "length-width", Value: 4, Usage: "bytes of the length field: 2 or 4"},
			&cli.IntFlag{Name: "max-body", Value: 1 << 20, Usage: "largest request body accepted, in bytes"},
			&cli.DurationFlag{Name: "idle-timeout", Value: 5 * time.Minute, Usage: "close connections idle this long (0: never)"},
			&cli.DurationFlag{Name: "drain-timeout", Value: 30 * time.Second, Usage: "on SIGTERM or SIGINT, stop accepting and let open connections go on this long before closing them (a second signal ends it)"},
			metricsFlag(),
			metricsMaxConnsFlag(),
			pprofFlag(),
		}, reactorFlags()...), logFlags()...),
		OnUsageError: usageError,
		Action:       func(c *cli.Context) error { return runServe(c, proc) },
	}
}

func runServe(c *cli.Context, proc *lifecycle.Process) error {
	log, err := newLogger(c)
	if err != nil {
		return configError(err)
	}
	f, err := tlv.NewFormat(c.Int("type-width"), c.Int("length-width"), c.Int("max-body"))
	if err != nil {
		return configError(err)
	}
	rc := reactorConfig(c, c.String("listen"))
	rc.Logger = log
	srv, err := tlvserver.New(tlvserver.Config{Reactor: rc, Format: f, IdleTimeout: c.Duration("idle-timeout")})
	if err != nil {
		return configError(err)
	}
	loops := rc.Loops
	if loops == 0 {
		loops = runtime.NumCPU()
	}
	startEvent(log, c).Int("loops", rc.Loops).Int("gomaxprocs", lifecycle.SpareP(loops)).Int("max_conns", rc.MaxConns).Int("max_body", f.MaxBody).
		Int64("buffer_budget", rc.BufferBudget).Dur("idle_timeout", c.Duration("idle-timeout")).Dur("drain_timeout", c.Duration("drain-timeout")).Msg(startMessage)
	if err := srv.Start(); err != nil {
		return startError(err)
	}
	norm := srv.Reactor().Config()
	log.Info().Strs("listen", boundAddrs(srv.Reactor())).Int("loops", norm.Loops).Int("max_conns", norm.MaxConns).
		Int("max_body", f.MaxBody).Msg("TLV server listening")
	h := lifecycle.NewRegistry()
	h.AddServer("tlv", srv.Reactor())
	metricsAddr, metrics, err := startMetrics(c, log, h, nil, nil, nil, tlvserver.NewCollector(srv))
	if err != nil {
		return stopAfter(err, srv.Stop)
	}
	drain := &lifecycle.Drain{Timeout: c.Duration("drain-timeout"), Shutdown: srv.Reactor().Shutdown, Open: srv.Reactor().OpenConns}
	ready := lifecycle.ListeningStatus(metricsAddr, "TLV server on "+strings.Join(boundAddrs(srv.Reactor()), ", "))
	return run(c, proc, lifecycle.RunOptions{Log: log, Health: h, Ready: ready, Drain: drain, Stop: lifecycle.StopAll(srv.Stop, metrics.Shutdown)})
}
