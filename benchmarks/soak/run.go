package soak

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/tidegate/tidegate/benchmarks/fdlimit"
	"github.com/tidegate/tidegate/benchmarks/gometrics"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/mcclient"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/players"
)

// serverFDs is the descriptors server holds per session: the proxy a
// client and its backend, serve and push the client.
func serverFDs(server string) int {
	if server == ServerProxy || server == "" {
		return 2
	}
	return 1
}

// Descriptor reserves beyond two per session, in this tool and the proxy.
const (
	toolReserve  = 256
	proxyReserve = 2*256 + 128 + 64
)

// Timeouts of the run's events.
const (
	upgradeTimeout = 150 * time.Second
	// recoverTimeout bounds the wait for a churn login to work again after
	// a backend restart, and for a reload to show in the metrics.
	recoverTimeout = 30 * time.Second
	stopTimeout    = 70 * time.Second // the proxy's drain_timeout and more
)

// proxyConfig is the proxy's configuration: one Minecraft listener; the
// steady players' host goes to the steady backend, every other host (the
// short-lived sessions') to the churn backend; no limits in the way of
// thousands of logins from one address; a backend that refused connects
// (the churn backend while it restarts) is tried again after 2 s rather
// than the default 10 s, so that a restart cuts few sessions; a connect
// may take 10 s rather than the default 3 s, because on the shared machine
// the soak runs on (load 20 to 30 on 2 cores) a process stalls for seconds
// (the steady players' round trips reach 5 s): with 3 s, the connects to
// the churn backend begun in a stall timed out together, marked it down
// and refused the sessions of its cooldown (the "soak offline" failures of
// benchmarks/results/2026-12-02-soak-hour.md and of a 4-minute run before
// the second hour). offline is the offline message, which the reloads
// change, so that each reload changes something.
func proxyConfig(listen, steadyHost, steady, churn string, loops int, offline string) string {
	return fmt.Sprintf(`# written by tidegate-bench bench soak (benchmarks/soak)
listeners:
  - listen: %s
    mode: minecraft
routes:
  - hosts: [%q]
    group: steady
default_group: churn
groups:
  steady:
    backends:
      - addr: %s
  churn:
    backends:
      - addr: %s
    offline_message: %q
loops: %d
limits:
  max_sessions: 0
  idle_timeout: 0s
  connection_rate: 0          # every session comes from 127.0.0.1
  login_rate: 0
  connect_timeout: 10s        # a loaded machine stalls for seconds
  subnet_connection_rate: 0
  subnet_login_rate: 0
  max_sessions_per_subnet: 0
health:
  cooldown: 2s
shutdown:
  drain_timeout: 60s
`, listen, steadyHost, steady, churn, offline, loops)
}

// run is one soak run's state.
type run struct {
	cfg     Config
	res     *Result
	dir     string
	cfgPath string
	listen  string
	metrics *gometrics.Client
	start   time.Time

	proxy     *harness.Child // the first process
	pid       int            // the process serving now
	segment   int            // 0 before the upgrade, 1 after it
	churnAddr string
	churnBE   *peers.Process
	short     *shortLived
	reloads   int
}

// fail records a failure of the run.
func (r *run) fail(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	r.res.Failures = append(r.res.Failures, msg)
	r.cfg.Log.Error().Msg(msg)
}

// Run runs the soak. It returns an error only when it could not start (a
// bad configuration, too few descriptors); what went wrong once it ran is
// in the result (Result.OK false, Result.Failures).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	lim, err := fdlimit.Raise()
	if err != nil {
		return nil, err
	}
	// Steady players and subscribers hold two descriptors here (their
	// socket and its duplicate for the epoll readers or gnet), the others
	// one: two for all is the bound.
	if err := fdlimit.Check(cfg.Sessions, lim.Soft, fmt.Sprintf("raise the hard limit of %d (ulimit -Hn) or use fewer --sessions", lim.Hard),
		fdlimit.Holder{Name: "this tool", PerSession: 2, Holds: "a socket and, for steady players, its duplicate", Reserve: toolReserve},
		fdlimit.Holder{Name: "the " + cfg.Server + ", which inherits this tool's limit", PerSession: serverFDs(cfg.Server), Reserve: proxyReserve}); err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, res: &Result{Params: paramsOf(cfg), FDLimit: lim}}
	ownDir := cfg.Dir == ""
	if ownDir {
		if cfg.Dir, err = os.MkdirTemp("", "tidegate-soak-"); err != nil {
			return nil, fmt.Errorf("work directory for the proxy's logs: %w", err)
		}
	} else if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("work directory %s: %w", cfg.Dir, err)
	}
	r.dir, r.res.Dir = cfg.Dir, cfg.Dir
	switch cfg.Server {
	case ServerServe:
		r.executeServe(ctx)
	case ServerPush:
		r.executePush(ctx)
	default:
		r.execute(ctx)
	}
	r.res.summarize(cfg)
	if ownDir && r.res.OK && os.Getenv(harness.KeepDirsEnv) == "" {
		os.RemoveAll(cfg.Dir)
		r.res.Dir = ""
	}
	return r.res, nil
}

// execute starts the backends and the proxy, runs the load and stops them.
func (r *run) execute(ctx context.Context) {
	cfg := r.cfg
	backend := func(name, addr string) (*peers.Process, error) {
		dir := filepath.Join(r.dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		return peers.StartBackend(peers.BackendSpec{Listen: addr, Loops: 1, Executable: cfg.Executable, Dir: dir})
	}
	start := func(name string) (*peers.Process, error) {
		return harness.RetryFreePort("127.0.0.1", func(addr string) (*peers.Process, error) { return backend(name, addr) })
	}
	steadyBE, err := start("backend-steady")
	if err != nil {
		r.fail("starting the steady backend: %v", err)
		return
	}
	defer steadyBE.Stop()
	if r.churnBE, err = start("backend-churn"); err != nil {
		r.fail("starting the churn backend: %v", err)
		return
	}
	r.churnAddr = r.churnBE.Addr()
	defer func() { r.churnBE.Stop() }()
	restartBackend := func() error {
		if err := r.churnBE.Stop(); err != nil {
			return err
		}
		var err error
		// The port was free a moment ago: its old sockets closed, the
		// listener's own is what is bound again.
		for attempt := 0; attempt < 5; attempt++ {
			if r.churnBE, err = backend("backend-churn", r.churnAddr); err == nil {
				return nil
			}
			time.Sleep(500 * time.Millisecond)
		}
		return err
	}

	if r.listen, err = harness.FreeAddr("127.0.0.1"); err != nil {
		r.fail("%v", err)
		return
	}
	metricsAddr, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		r.fail("%v", err)
		return
	}
	steadyHost, _, _ := mcclient.SplitHostPort(r.listen)
	r.cfgPath = filepath.Join(r.dir, "tidegate.yaml")
	writeConfig := func(n int) error {
		text := proxyConfig(r.listen, steadyHost, steadyBE.Addr(), r.churnAddr, cfg.Loops, "soak offline "+strconv.Itoa(n))
		return os.WriteFile(r.cfgPath, []byte(text), 0o644)
	}
	if err := writeConfig(0); err != nil {
		r.fail("writing the proxy configuration: %v", err)
		return
	}
	argv := []string{cfg.Executable, "proxy", "--config", r.cfgPath, "--metrics-listen", metricsAddr, "--log-level", "warn", "--log-format", "json"}
	started := r.startServer(ctx, "tidegate-proxy", argv, metricsAddr)
	if r.proxy != nil {
		defer r.stopProxy()
	}
	if !started {
		return
	}
	mcw, err := newMinecraftWire(r.listen, ChurnHost)
	if err != nil {
		r.fail("%v", err)
		return
	}
	r.short = newShortLived(r.listen, mcw, cfg.Hold, cfg.StalledBurst)
	r.short.leak = cfg.leak
	defer r.short.closeLeaked()

	// The steady players log in, then the clock starts.
	p := players.Params{Sessions: cfg.steady(), Rate: cfg.Rate, Warmup: time.Second, Duration: cfg.Duration, Drain: 15 * time.Second,
		FrameMin: 60, FrameMax: 200, Seed: 1, Senders: 4, SendTick: time.Millisecond}
	if err := p.Validate(); err != nil {
		r.fail("%v", err)
		return
	}
	wait, ok := startSteady(r, "steady players", func(began func()) (players.Measurement, error) {
		return players.Run(ctx, r.listen, p, cfg.Stall, harness.PhaseHooks{Before: func() error { began(); return nil }})
	})
	if !ok {
		return
	}
	nextReload, nextRestart := cfg.ReloadEvery, cfg.RestartEvery
	upgraded := cfg.UpgradeAt < 0
	kinds := []shortKind{{kindChurn, cfg.Churn, r.short.churn}, {kindStalled, cfg.Stalled, r.short.stalled}, {kindHalfClose, cfg.HalfClose, r.short.halfClose}}
	r.loadFor(ctx, kinds, func(since time.Duration) {
		switch {
		case !upgraded && since >= cfg.UpgradeAt:
			upgraded = true
			r.upgrade(ctx)
		case since >= nextReload:
			nextReload += cfg.ReloadEvery
			r.reload(ctx, writeConfig)
		case since >= nextRestart:
			nextRestart += cfg.RestartEvery
			r.restart(ctx, restartBackend)
		}
	})
	m, err := wait()
	r.res.Steady = steadyOf(p, m)
	if err != nil {
		r.fail("steady players: %v", err)
	}
	if ctx.Err() != nil {
		r.fail("interrupted: %v", ctx.Err())
	}
	if r.churnBE != nil {
		if err := r.churnBE.ExitError(); err != nil && !r.churnBE.Running() {
			r.fail("the churn backend exited by itself: %v", err)
		}
	}
}

// sampleUntil samples the server every Interval until loadCtx ends, and
// after each sample calls event (if not nil) with the time since the start,
// to run what is due.
func (r *run) sampleUntil(ctx, loadCtx context.Context, event func(since time.Duration)) {
	sample := time.NewTicker(r.cfg.Interval)
	defer sample.Stop()
	for loadCtx.Err() == nil {
		select {
		case <-loadCtx.Done():
			continue
		case <-sample.C:
			if loadCtx.Err() != nil || time.Since(r.start) > r.cfg.Duration-r.cfg.Interval/2 {
				continue // the run is ending: no sample of the sessions closing, no event
			}
			r.sample(ctx)
		}
		if event != nil {
			event(time.Since(r.start))
		}
	}
}

// sample reads the server and appends a sample.
func (r *run) sample(ctx context.Context) {
	s := Sample{At: time.Since(r.start).Seconds(), Segment: r.segment}
	h := r.short.takeLatency()
	s.Latencies = h.TotalCount()
	if s.Latencies > 0 {
		s.LatencyP50Ms = float64(h.ValueAtQuantile(50)) / 1e6
		s.LatencyP99Ms = float64(h.ValueAtQuantile(99)) / 1e6
	}
	if err := readProxy(ctx, r.metrics, r.pid, &s); err != nil {
		s.Error = err.Error()
	}
	r.res.Samples = append(r.res.Samples, s)
	r.cfg.Log.Info().Float64("t_s", s.At).Int("pid", s.PID).Int64("rss", s.RSSBytes).Float64("heap", s.HeapLiveBytes).Int("fds", s.FDs).Float64("fd_accounted", s.FDAccounted).Float64("connect_failures", s.ConnectFailures).
		Int("goroutines", s.Goroutines).Int("gnet_workers", s.GnetWorkers).Int("threads", s.Threads).Float64("queued", s.QueuedBytes).Float64("latency_p99_ms", s.LatencyP99Ms).
		Str("error", s.Error).Msg("sample")
}

// reload rewrites the configuration (another offline message) and sends
// SIGHUP, then waits for the metrics to count the reload as ok.
func (r *run) reload(ctx context.Context, write func(int) error) {
	before, err := r.reloadsOK(ctx)
	if err != nil {
		r.fail("before reload %d: %v", r.reloads+1, err)
		return
	}
	r.reloads++
	if err := write(r.reloads); err != nil {
		r.fail("reload %d: writing the configuration: %v", r.reloads, err)
		return
	}
	at := time.Now()
	if err := syscall.Kill(r.pid, syscall.SIGHUP); err != nil {
		r.fail("reload %d: SIGHUP to pid %d: %v", r.reloads, r.pid, err)
		return
	}
	for time.Since(at) < recoverTimeout && ctx.Err() == nil {
		if n, err := r.reloadsOK(ctx); err == nil && n > before {
			r.res.Events = append(r.res.Events, Event{At: at.Sub(r.start).Seconds(), Kind: "reload", TookMs: harness.Ms(time.Since(at))})
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ctx.Err() == nil {
		r.fail("reload %d: tidegate_config_reloads_total{result=\"ok\"} still %v %s after SIGHUP", r.reloads, before, recoverTimeout)
	}
}

// reloadsOK reads the count of reloads that took effect.
func (r *run) reloadsOK(ctx context.Context) (float64, error) {
	v, err := r.metrics.Scrape(ctx)
	if err != nil {
		return 0, err
	}
	return v[`tidegate_config_reloads_total{result="ok"}`], nil
}

// restart stops the churn backend and starts it again on its address; the
// short-lived sessions cut meanwhile are expected, until a churn login
// works again.
func (r *run) restart(ctx context.Context, restart func() error) {
	at := time.Now()
	r.short.restart.Add(1)
	defer r.short.restart.Add(1)
	if err := restart(); err != nil {
		r.fail("restarting the churn backend on %s: %v", r.churnAddr, err)
		return
	}
	r.cfg.Log.Info().Dur("took", time.Since(at)).Msg("churn backend restarted")
	for time.Since(at) < recoverTimeout && ctx.Err() == nil {
		c, _, err := r.short.login(ctx, nil, "probe", time.Second)
		if err == nil {
			c.Close()
			r.res.Events = append(r.res.Events, Event{At: at.Sub(r.start).Seconds(), Kind: "backend restart", TookMs: harness.Ms(time.Since(at))})
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ctx.Err() == nil {
		r.fail("no churn login through the proxy worked within %s of the backend restart", recoverTimeout)
	}
}

// upgrade sends SIGUSR2, waits for the old process to exit and for the
// new one to answer /healthz; samples go on with it as segment 1.
func (r *run) upgrade(ctx context.Context) {
	at := time.Now()
	old := r.pid
	if err := syscall.Kill(old, syscall.SIGUSR2); err != nil {
		r.fail("SIGUSR2 to the proxy (pid %d): %v", old, err)
		return
	}
	r.cfg.Log.Info().Int("old_pid", old).Msg("SIGUSR2 sent")
	select {
	case <-r.proxy.Exited():
	case <-time.After(upgradeTimeout):
		r.fail("the old proxy (pid %d) had not exited %s after SIGUSR2", old, upgradeTimeout)
		return
	case <-ctx.Done():
		return
	}
	if err := r.proxy.ExitError(); err != nil {
		r.fail("the old proxy (pid %d) ended after SIGUSR2 with %v, want exit status 0", old, err)
	}
	exited := time.Since(at)
	for time.Since(at) < exited+10*time.Second {
		if pid, status, err := harness.HealthPID(ctx, r.metrics.HTTP, r.metrics.Base); err == nil && status == http.StatusOK && pid != old {
			r.pid, r.segment = pid, 1
			r.res.SegmentStarts = append(r.res.SegmentStarts, time.Since(r.start).Seconds())
			r.res.Events = append(r.res.Events, Event{At: at.Sub(r.start).Seconds(), Kind: "live upgrade", TookMs: harness.Ms(exited),
				Note: fmt.Sprintf("pid %d to %d", old, pid)})
			r.res.NewPID = pid
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.fail("no new process answered /healthz within 10s of the old one's exit (pid %d)", old)
}

// stopProxy stops whichever process serves: the first through its Child,
// the one the upgrade started (not this tool's child) by SIGTERM and a
// wait; and kills any proxy on the run's configuration left over.
func (r *run) stopProxy() {
	if r.proxy.Running() {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		if err := r.proxy.StopContext(ctx); err != nil {
			r.fail("stopping the proxy: %v", err)
		}
	} else if err := r.proxy.Stop(); err != nil {
		r.fail("%v", err)
	}
	if r.res.NewPID != 0 {
		if _, _, err := harness.StopPID(r.res.NewPID, stopTimeout); err != nil {
			r.fail("stopping the upgraded proxy: %v", err)
		}
	}
	if r.cfgPath == "" {
		return // serve and push: no upgrade started a process this tool does not hold
	}
	for _, pid := range harness.KillMarked(r.cfgPath) {
		r.fail("pid %d (a proxy on %s) was still running at the end: killed", pid, r.cfgPath)
	}
}
