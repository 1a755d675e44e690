package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/lifecycle"
	"github.com/tidegate/tidegate/session/pushserver"
)

// pushCommand runs the fan-out push server.
func pushCommand(proc *lifecycle.Process) *cli.Command {
	def := pushserver.DefaultConfig()
	return &cli.Command{
		Name:  "push",
		Usage: "run the fan-out push server (Mantis push: legacy TCP framing and Server-Sent Events)",
		Description: "Publishers connect to --publish-listen and send TLV frames of type 1 whose body is\n" +
			"  u8 topicLen | topic | (u32 len | payload)...\n" +
			"Subscribers connect to --subscribe-listen and either send \"SUBSCRIBE <topic>\\n\" (Mantis legacy TCP\n" +
			"framing: u32 length | 0x01 | nameLen | name | (u32 len | op | payload)...) or\n" +
			"\"GET /events?topic=<topic> HTTP/1.1\" (Server-Sent Events). Each subscriber's events are written\n" +
			"once per --window as one batch. Output queued for a subscriber stays under --high-watermark:\n" +
			"a batch is written only as far as it fits (oldest events first), the rest is dropped, counted\n" +
			"and reported to the subscriber in its next batch. A subscriber that stays not writable for\n" +
			"--not-writable-timeout is aborted, and --buffer-budget bounds the output queued for all\n" +
			"subscribers together. A topic lives while it has subscribers.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "publish-listen", Value: def.PublishAddr, Usage: "address publishers connect to"},
			&cli.StringFlag{Name: "subscribe-listen", Value: def.SubscribeAddr, Usage: "address TCP and SSE subscribers connect to"},
			&cli.DurationFlag{Name: "window", Value: def.Window, Usage: "how long each subscriber's events are buffered into one batch; 0 writes at once"},
			&cli.DurationFlag{Name: "heartbeat", Value: def.Heartbeat, Usage: "write idleness after which a heartbeat is sent; 0 disables"},
			&cli.DurationFlag{Name: "read-idle", Value: def.ReadIdle, Usage: "read idleness after which a TCP subscriber (or an unfinished request) is closed; 0 disables"},
			&cli.IntFlag{Name: "high-watermark", Value: def.HighWatermark, Usage: "most output `BYTES` queued per subscriber: what does not fit is dropped, counted and reported " +
				"(a batch written while nothing is queued may leave one batch queued)"},
			&cli.DurationFlag{Name: "drain-timeout", Value: 30 * time.Second, Usage: "on SIGTERM or SIGINT, stop accepting and let publishers go on this long; then every subscriber gets its pending batch and is closed once it is delivered (a second signal ends it)"},
			&cli.DurationFlag{Name: "not-writable-timeout", Value: def.NotWritableTimeout, Usage: "abort a subscriber that stays not writable this long (its batches cut while output is queued, " +
				"or output still queued when a heartbeat is due) and count it; 0 disables"},
			&cli.IntFlag{Name: "buffer-budget", Value: def.BufferBudget, Usage: "most output `BYTES` queued for all subscribers together: a subscriber with output queued may hold " +
				"at most 1/16 of what is left, so near it the batches of those holding the most are dropped first (counted as budget drops); 0 disables"},
			&cli.IntFlag{Name: "window-phases", Value: def.WindowPhases, Usage: "spread the batches of a loop's subscribers over N moments of the window: a large fan-out then " +
				"does not write every batch at the window's end (lower tail latency) but each moment costs wake-ups (more CPU); 0 or 1 writes them together"},
			&cli.IntFlag{Name: "max-topics", Value: def.MaxTopics, Usage: "most topics at once (a topic lives while it has subscribers); subscriptions to new topics past it are refused"},
			&cli.IntFlag{Name: "loops", Value: 0, Usage: "event loops for subscribers; 0 means one per core"},
			&cli.IntFlag{Name: "publish-loops", Value: def.PublishLoops, Usage: "event loops for publishers"},
			&cli.IntFlag{Name: "max-batch-events", Value: def.MaxBatchEvents, Usage: "write a subscriber's batch early once it holds this many events"},
			&cli.IntFlag{Name: "max-batch-bytes", Value: def.MaxBatchBytes, Usage: "write a subscriber's batch early once it holds this many bytes"},
			metricsFlag(),
			metricsMaxConnsFlag(),
			pprofFlag(),
			&cli.DurationFlag{Name: "stats-interval", Value: 10 * time.Second, Usage: "how often counters are logged; 0 disables"},
		}, logFlags()...),
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			log, err := newLogger(c)
			if err != nil {
				return configError(err)
			}
			cfg := pushserver.DefaultConfig()
			cfg.PublishAddr = c.String("publish-listen")
			cfg.SubscribeAddr = c.String("subscribe-listen")
			cfg.Window = c.Duration("window")
			cfg.WindowPhases = c.Int("window-phases")
			cfg.Heartbeat = c.Duration("heartbeat")
			cfg.ReadIdle = c.Duration("read-idle")
			cfg.HighWatermark = c.Int("high-watermark")
			cfg.NotWritableTimeout = c.Duration("not-writable-timeout")
			cfg.BufferBudget = c.Int("buffer-budget")
			cfg.MaxTopics = c.Int("max-topics")
			cfg.Loops = c.Int("loops")
			cfg.PublishLoops = c.Int("publish-loops")
			cfg.MaxBatchEvents = c.Int("max-batch-events")
			cfg.MaxBatchBytes = c.Int("max-batch-bytes")
			cfg.Logger = log
			return runPush(c, proc, cfg, log)
		},
	}
}

// runPush starts the push server of cfg and serves until a signal, or until
// an engine ends, logging its counters every --stats-interval.
func runPush(c *cli.Context, proc *lifecycle.Process, cfg pushserver.Config, log zerolog.Logger) error {
	srv, err := pushserver.New(cfg)
	if err != nil {
		return configError(fmt.Errorf("push server: %w", err))
	}
	loops := cfg.Loops
	if loops == 0 {
		loops = runtime.NumCPU()
	}
	startEvent(log, c).Int("loops", loops).Int("publish_loops", cfg.PublishLoops).Int("gomaxprocs", lifecycle.SpareP(loops+cfg.PublishLoops)).Int("max_topics", cfg.MaxTopics).
		Int("high_watermark", cfg.HighWatermark).Int("buffer_budget", cfg.BufferBudget).Dur("window", cfg.Window).
		Msg(startMessage)
	if err := srv.Start(); err != nil {
		return startError(err)
	}
	h := lifecycle.NewRegistry()
	pub, sub := srv.Reactors()
	h.AddServer("publish", pub)
	h.AddServer("subscribe", sub)
	metricsAddr, metrics, err := startMetrics(c, log, h, nil, nil, nil, pushserver.NewCollector(srv))
	if err != nil {
		return stopAfter(err, srv.Stop)
	}
	if d := c.Duration("stats-interval"); d > 0 {
		quit := make(chan struct{})
		defer close(quit)
		go logPushStats(log, srv, d, quit)
	}
	ready := lifecycle.ListeningStatus(metricsAddr, "publish on "+strings.Join(boundAddrs(pub), ", "),
		"subscribe on "+strings.Join(boundAddrs(sub), ", "))
	drain := &lifecycle.Drain{
		Timeout:  c.Duration("drain-timeout"),
		Shutdown: srv.Shutdown,
		Open:     srv.OpenConns,
	}
	return run(c, proc, lifecycle.RunOptions{Log: log, Health: h, Ready: ready, Drain: drain, Stop: lifecycle.StopAll(srv.Stop, metrics.Shutdown)})
}

// logPushStats logs srv's counters every d until quit is closed.
func logPushStats(log zerolog.Logger, srv *pushserver.Server, d time.Duration, quit <-chan struct{}) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
		}
		st := srv.Stats()
		log.Info().Int64("publishers", st.Publishers).Int64("tcp_subscribers", st.TCPSubscribers).
			Int64("sse_subscribers", st.SSESubscribers).Int64("published_events", st.PublishedEvents).
			Int64("processed_writes", st.ProcessedWrites).Int64("successful_writes", st.SuccessfulWrites).
			Int64("failed_writes", st.FailedWrites).Int64("dropped", st.Dropped).Int64("budget_dropped", st.BudgetDropped).
			Int64("batches", st.Batches).Int64("batch_events", st.BatchEvents).Int64("queued_bytes", st.QueuedBytes).
			Int64("not_writable_closes", st.StuckCloses).Int64("topics", st.Topics).Msg("push stats")
	}
}
