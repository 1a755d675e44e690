package soak

// This file holds the soaks of the other servers: `tidegate serve` (TLV
// echo) and `tidegate push` (fan-out), each under its own clients, sampled
// and tested as the proxy is (run.go).

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/pushload"
)

// Servers a soak runs (Config.Server).
const (
	ServerProxy = "proxy"
	ServerServe = "serve"
	ServerPush  = "push"
)

// Servers lists the servers a soak can run.
var Servers = []string{ServerProxy, ServerServe, ServerPush}

// The push soak's publisher: pushEventRate events a second of
// pushPayload bytes each (the sequence number first), on pushTopic.
const (
	pushEventRate = 10
	pushPayload   = 256
	pushTopic     = "soak"
)

// startSteady runs load (the steady sessions, which call began once they
// are all connected) in the background and returns once they have begun,
// with a wait for their result; false (the failure recorded) when the load
// ended before it began.
func startSteady[T any](r *run, what string, load func(began func()) (T, error)) (wait func() (T, error), ok bool) {
	began := make(chan struct{})
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := load(func() { close(began) })
		done <- result{v, err}
	}()
	select {
	case <-began:
	case res := <-done:
		r.fail("the %s did not start: %v", what, res.err)
		return nil, false
	}
	r.cfg.Log.Info().Str("steady", what).Int("sessions", r.cfg.steady()).Int("pid", r.pid).Msg("steady sessions connected; soak started")
	return func() (T, error) { res := <-done; return res.v, res.err }, true
}

// startServer starts the server under test (argv, listening on listen) as
// the run's first process, with its metrics on metricsAddr, and waits for
// them; it reports whether it could.
func (r *run) startServer(ctx context.Context, name string, argv []string, metricsAddr string) bool {
	var err error
	r.proxy, err = harness.Start(ctx, harness.ChildSpec{Name: name, Listen: r.listen, Argv: argv, Dir: r.dir, Env: []string{"GOTRACEBACK=all"}})
	if err != nil {
		r.fail("%v", err)
		return false
	}
	r.res.ProxyLog = r.proxy.LogPath()
	r.pid = r.proxy.PID()
	r.metrics = newMetricsClient(metricsAddr)
	if err := r.metrics.WaitReady(ctx, 10*time.Second); err != nil {
		r.fail("the %s's metrics: %v", name, err)
		return false
	}
	return true
}

// freeAddrs returns n free loopback addresses.
func (r *run) freeAddrs(n int) ([]string, bool) {
	addrs := make([]string, n)
	for i := range addrs {
		var err error
		if addrs[i], err = harness.FreeAddr("127.0.0.1"); err != nil {
			r.fail("%v", err)
			return nil, false
		}
	}
	return addrs, true
}

// loadFor starts the short-lived workers, samples until the run's
// duration has passed (calling event, if not nil, after each sample: see
// sampleUntil), and waits for the workers; kinds maps a kind to its
// worker count and session.
func (r *run) loadFor(ctx context.Context, kinds []shortKind, event func(since time.Duration)) {
	r.start = time.Now()
	r.short.zero.Store(&r.start)
	r.res.SegmentStarts = []float64{0}
	loadCtx, stopLoad := context.WithTimeout(ctx, r.cfg.Duration)
	defer stopLoad()
	var wg sync.WaitGroup
	for _, k := range kinds {
		r.short.run(loadCtx, &wg, k.kind, k.workers, k.one)
	}
	r.sampleUntil(ctx, loadCtx, event)
	wg.Wait()
	r.res.Short, r.res.ShortFailures = r.short.snapshot()
}

// shortKind is one kind of short-lived worker of a run.
type shortKind struct {
	kind    string
	workers int
	one     session
}

// executeServe runs `tidegate serve` under steady pipelined clients,
// churn, stalled readers and half-closes.
func (r *run) executeServe(ctx context.Context) {
	cfg := r.cfg
	addrs, ok := r.freeAddrs(2)
	if !ok {
		return
	}
	r.listen = addrs[0]
	argv := []string{cfg.Executable, "serve", "--listen", r.listen, "--metrics-listen", addrs[1], "--loops", strconv.Itoa(cfg.Loops),
		"--idle-timeout", "0", "--log-level", "warn", "--log-format", "json"}
	started := r.startServer(ctx, "tidegate-serve", argv, addrs[1])
	if r.proxy != nil {
		defer r.stopProxy()
	}
	if !started {
		return
	}
	r.short = newShortLived(r.listen, tlvWire{}, cfg.Hold, cfg.StalledBurst)
	r.short.leak = cfg.leak
	defer r.short.closeLeaked()
	loadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	wait, ok := startSteady(r, "steady clients", func(began func()) (Steady, error) {
		return runSteadyTLV(loadCtx, r.listen, cfg.steady(), cfg.Rate, cfg.Stall, began)
	})
	if !ok {
		return
	}
	r.loadFor(ctx, []shortKind{{kindChurn, cfg.Churn, r.short.churn}, {kindStalled, cfg.Stalled, r.short.stalled}, {kindHalfClose, cfg.HalfClose, r.short.halfClose}}, nil)
	cancel()
	var err error
	if r.res.Steady, err = wait(); err != nil {
		r.fail("steady clients: %v", err)
	}
}

// executePush runs `tidegate push` under a publisher and steady TCP
// subscribers (package pushload: every event, in order, to every one),
// churn subscribers and slow ones.
func (r *run) executePush(ctx context.Context) {
	cfg := r.cfg
	addrs, ok := r.freeAddrs(3)
	if !ok {
		return
	}
	publish, metricsAddr := addrs[1], addrs[2]
	r.listen = addrs[0]
	argv := []string{cfg.Executable, "push", "--subscribe-listen", r.listen, "--publish-listen", publish, "--metrics-listen", metricsAddr,
		"--loops", strconv.Itoa(cfg.Loops), "--stats-interval", "0", "--log-level", "warn", "--log-format", "json"}
	started := r.startServer(ctx, "tidegate-push", argv, metricsAddr)
	if r.proxy != nil {
		defer r.stopProxy()
	}
	if !started {
		return
	}
	r.short = newShortLived(r.listen, nil, cfg.Hold, cfg.StalledBurst)
	subs := &pushSubs{short: r.short, topic: pushTopic}
	wait, ok := startSteady(r, "steady subscribers", func(began func()) (pushload.Result, error) {
		return pushload.Run(ctx, pushload.Config{PublishAddr: publish, SubscribeAddr: r.listen, Subscribers: cfg.steady(), Topic: pushTopic,
			Rate: pushEventRate, EventsPerFrame: 1, PayloadSize: pushPayload, Duration: cfg.Duration, Drain: 15 * time.Second, ClientLoops: 2,
			OnConnected: func() error { began(); return nil }, Logger: cfg.Log})
	})
	if !ok {
		return
	}
	r.loadFor(ctx, []shortKind{{kindChurn, cfg.Churn, subs.churn}, {kindStalled, cfg.Stalled, subs.slow}}, nil)
	res, err := wait()
	r.res.Steady = Steady{Sessions: cfg.steady(), Frames: res.TotalExpected, Replies: res.TotalDelivered}
	if err != nil {
		r.res.Steady.Wrong = max(1, res.TotalExpected-res.TotalDelivered+res.OutOfOrder)
		r.res.Steady.Samples = []string{err.Error()}
	}
}

// serverDescription is the report's account of the load and the events
// for a run of p's server.
func serverDescription(p Params) (load, events string) {
	switch p.Server {
	case ServerServe:
		return fmt.Sprintf("%d steady clients (%d pipelined TLV requests of %d–%d bytes %d times a second each, every response checked, sha256 of each connection's bytes both ways compared), "+
				"%d churn (connect, echo one request, hold %gs, leave), %d stalled readers (a %d KiB burst left unread for %gs behind a 4 KiB receive buffer, then read and checked), "+
				"%d half-closes (a request, shutdown(SHUT_WR), the response and the end of the stream)",
				p.Steady, tlvPipeline, tlvBodyMin, tlvBodyMax, p.Rate, p.Churn, p.HoldS/2, p.Stalled, p.StalledBurst>>10, p.HoldS, p.HalfClose),
			fmt.Sprintf("none (serve has no configuration to reload); `tidegate serve --loops %d`", p.Loops)
	case ServerPush:
		return fmt.Sprintf("one publisher (%d events a second of %d bytes on one topic), %d steady TCP subscribers (package pushload: every event, in order, to every one), "+
				"%d churn subscribers (subscribe, two events in order, hold %gs, leave), %d slow subscribers (a 4 KiB receive buffer, nothing read for %gs, then every event in order or reported dropped)",
				pushEventRate, pushPayload, p.Steady, p.Churn, p.HoldS/2, p.Stalled, p.HoldS),
			fmt.Sprintf("none (push has no configuration to reload); `tidegate push --loops %d`", p.Loops)
	}
	return fmt.Sprintf("%d steady players (a 60–200-byte PLAY frame %d times a second each, every echo checked), %d churn (log in, echo one frame, hold %gs, leave), "+
			"%d stalled readers (a %d KiB burst left unread for %gs behind a 4 KiB receive buffer, then read and checked), %d half-closes (a frame, shutdown(SHUT_WR), the echo and the end of the stream)",
			p.Steady, p.Rate, p.Churn, p.HoldS/2, p.Stalled, p.StalledBurst>>10, p.HoldS, p.HalfClose),
		fmt.Sprintf("SIGHUP (the configuration rewritten) every %gs, the churn backend restarted every %gs, one SIGUSR2 at %gs; proxy: one Minecraft listener, %d loops, "+
			"steady players routed to a backend never restarted, the rest to the churn backend (both `tidegate backend`)", p.ReloadEveryS, p.RestartEveryS, p.UpgradeAtS, p.Loops)
}
