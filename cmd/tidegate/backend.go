package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/lifecycle"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// backendCommand runs the fake Minecraft backend used by tests and benchmarks.
func backendCommand(proc *lifecycle.Process) *cli.Command {
	return &cli.Command{
		Name:  "backend",
		Usage: "run a fake Minecraft Java backend that logs clients in offline and echoes play frames",
		Description: "The backend answers status pings (the reported protocol is the client's own),\n" +
			"logs clients of any protocol version in offline mode (1.20.2+ through the\n" +
			"configuration state, with a Login (play) packet for 1.20.2-1.20.4 clients) and\n" +
			"then echoes every play frame back unchanged, one batched write per read, reading no\n" +
			"faster than the client drains the echo.\n\n" +
			"--slow-sink slow consumes at most --slow-rate bytes per second once play begins;\n" +
			"--slow-sink stall stops reading for good once play begins (to test a proxy's\n" +
			"backpressure). --reply-delay holds every play echo that long before writing it,\n" +
			"in order (the session benchmark's --app-rtt: a round-trip time emulated in user\n" +
			"space where the kernel has no netem). --chunk-replies answers a chunk request with a\n" +
			"large frame instead of its echo, as a server sends chunk data (the session benchmark's\n" +
			"players workload): a play frame whose body is packet ID 0x7F, the 4 bytes \"tgck\", a\n" +
			"big-endian uint32 reply size S (the request's own body length to 1 MiB) and anything\n" +
			"else gets one frame of S body bytes: the request's body, then filler whose byte at body\n" +
			"offset i is j*131 + j/256 + 17 (mod 256), j = i mod 65521. Other frames, and every frame\n" +
			"of a compressed connection, are echoed unchanged.\n\n" +
			"It runs until interrupted (SIGINT or SIGTERM) and then logs its counters.",
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:25565", Usage: "listen address(es), comma-separated"},
			&cli.IntFlag{Name: "compression-threshold", Value: -1,
				Usage: "send Set Compression with this threshold in bytes during login (protocol 47+); -1 turns compression off"},
			&cli.StringFlag{Name: "slow-sink", Value: "none", Usage: "play input reading: none, slow (at most --slow-rate) or stall (never)"},
			&cli.StringFlag{Name: "slow-rate", Value: "64KiB", Usage: "bytes per second read in --slow-sink slow mode (suffixes KiB, MiB)"},
			&cli.DurationFlag{Name: "reply-delay", Usage: "hold every play echo this long before writing it (0: echo at once)"},
			&cli.StringFlag{Name: "max-frame", Value: "2097151", Usage: "largest play frame body accepted, in bytes (suffixes KiB, MiB)"},
			&cli.DurationFlag{Name: "login-timeout", Value: mcbackend.DefaultLoginTimeout,
				Usage: "close connections that have not reached play (or finished a status ping) within this time"},
			&cli.BoolFlag{Name: "chunk-replies", Usage: "answer chunk requests (packet 0x7F \"tgck\" + uint32 size) with a frame of that size instead of the echo"},
			&cli.BoolFlag{Name: "skip-join-game", Usage: "do not send Login (play) to 1.20.2-1.20.4 clients when play begins"},
			&cli.DurationFlag{Name: "join-delay", Usage: "send that Login (play) this long after play begins, as a server's next tick (0: at once)"},
			&cli.StringFlag{Name: "forwarding", Value: "none", Usage: "what a proxy in front must forward: none, bungeecord or velocity"},
			&cli.StringFlag{Name: "forwarding-key-file", Usage: "the velocity forwarding secret's file (Velocity's forwarding.secret)"},
			metricsFlag(),
			metricsMaxConnsFlag(),
			pprofFlag(),
		}, reactorFlags()...), logFlags()...),
		OnUsageError: usageError,
		Action:       func(c *cli.Context) error { return runBackend(c, proc) },
	}
}

func runBackend(c *cli.Context, proc *lifecycle.Process) error {
	log, err := newLogger(c)
	if err != nil {
		return configError(err)
	}
	mode, err := mcbackend.ParseSlowSinkMode(c.String("slow-sink"))
	if err != nil {
		return configError(fmt.Errorf("--slow-sink: %w", err))
	}
	var sizes [2]int
	for i, name := range []string{"slow-rate", "max-frame"} {
		n, err := mcbackend.ParseByteSize(c.String(name))
		if err != nil {
			return configError(fmt.Errorf("--%s: %w", name, err))
		}
		if n > 1<<31-1 {
			return configError(fmt.Errorf("--%s %s is too large", name, c.String(name)))
		}
		sizes[i] = int(n)
	}
	fw, err := mcbackend.ParseForwarding(c.String("forwarding"))
	if err != nil {
		return configError(fmt.Errorf("--forwarding: %w", err))
	}
	var secret []byte
	if path := c.String("forwarding-key-file"); path != "" {
		if secret, err = os.ReadFile(path); err != nil {
			return configError(fmt.Errorf("--forwarding-key-file: %w", err))
		}
		secret = bytes.TrimSpace(secret)
	}
	threshold := c.Int("compression-threshold")
	rc := reactorConfig(c, c.String("listen"))
	rc.Logger = log
	cfg := mcbackend.Config{
		Reactor:              rc,
		Compression:          threshold >= 0,
		CompressionThreshold: max(threshold, 0),
		SlowSink:             mode,
		SlowRate:             sizes[0],
		MaxFrameLength:       sizes[1],
		LoginTimeout:         c.Duration("login-timeout"),
		SkipJoinGame:         c.Bool("skip-join-game"),
		JoinGameDelay:        c.Duration("join-delay"),
		ReplyDelay:           c.Duration("reply-delay"),
		ChunkReplies:         c.Bool("chunk-replies"),
		Forwarding:           fw,
		ForwardingSecret:     secret,
	}
	if threshold < -1 {
		return configError(fmt.Errorf("--compression-threshold %d: want -1 (off) or a threshold of 0 or more", threshold))
	}
	if mode == mcbackend.SlowSinkSlow && cfg.SlowRate == 0 {
		return configError(fmt.Errorf("--slow-rate %s: want a positive rate", c.String("slow-rate")))
	}
	srv, err := mcbackend.New(cfg)
	if err != nil {
		return configError(err)
	}
	startEvent(log, c).Int("loops", rc.Loops).Int("max_conns", rc.MaxConns).Int64("buffer_budget", rc.BufferBudget).Dur("login_timeout", cfg.LoginTimeout).
		Msg(startMessage)
	if err := srv.Start(); err != nil {
		return startError(err)
	}
	norm := srv.Config()
	log.Info().Strs("listen", boundAddrs(srv.Reactor())).Int("loops", norm.Reactor.Loops).Int("compression_threshold", threshold).
		Str("slow_sink", mode.String()).Int("slow_rate", norm.SlowRate).Dur("reply_delay", norm.ReplyDelay).Bool("chunk_replies", norm.ChunkReplies).Dur("login_timeout", norm.LoginTimeout).
		Msg("fake Minecraft backend listening")
	h := lifecycle.NewRegistry()
	h.AddServer("backend", srv.Reactor())
	metricsAddr, metrics, err := startMetrics(c, log, h, nil, nil, nil)
	if err != nil {
		return stopAfter(err, srv.Stop)
	}
	ready := lifecycle.ListeningStatus(metricsAddr, "fake Minecraft backend on "+strings.Join(boundAddrs(srv.Reactor()), ", "))
	return run(c, proc, lifecycle.RunOptions{Log: log, Health: h, Ready: ready, Stop: lifecycle.StopAll(func(ctx context.Context) error {
		err := srv.Stop(ctx)
		st := srv.Stats()
		log.Info().Int64("accepted", st.Reactor.Accepted).Int64("status_requests", st.StatusRequests).
			Int64("play_started", st.PlayStarted).Int64("echo_frames", st.EchoFrames).Int64("echo_bytes", st.EchoBytes).Int64("chunk_replies", st.ChunkReplies).
			Int64("slow_pauses", st.SlowPauses).Int64("held_writes", st.HeldWrites).Int64("held_late_ns", st.HeldLateNs).Int64("timeouts", st.Timeouts).Int64("rejected", st.Rejected()).
			Msg("backend stopped")
		return err
	}, metrics.Shutdown)})
}
