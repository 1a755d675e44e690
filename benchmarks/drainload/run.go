package drainload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/gometrics"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/procstat"
)

// Server is one build of tidegate to measure.
type Server struct {
	// Label names it in the results, such as before or after.
	Label string
	// Binary is the tidegate executable whose `serve` is measured.
	Binary string
	// Version is what `Binary version` printed; Run fills it in.
	Version string
}

// Config is a drain benchmark.
type Config struct {
	Servers []Server
	// Repeats is the number of trials per server; the order rotates.
	Repeats int
	// Conns are the connections paused at once.
	Conns int
	// Loops is the servers' --loops.
	Loops int
	// HighWatermark and LowWatermark are the servers' watermarks.
	HighWatermark, LowWatermark int
	// RequestSize is the size of one request, header included.
	RequestSize int
	// ClientRcvBuf and ClientSndBuf set the client sockets' buffers (0:
	// the system's autotuning), which bounds the kernel memory a stalled
	// connection holds on the client side.
	ClientRcvBuf, ClientSndBuf int
	// ClientMSS is the client sockets' TCP_MAXSEG (0: the route's), which
	// the server's side adopts too.
	ClientMSS int
	// FillParallel is how many connections fill at once.
	FillParallel int
	// IdleWindow and Window are the CPU sampling windows without
	// connections and with every connection paused; Settle precedes each.
	IdleWindow, Window, Settle time.Duration
	// Tail is how many more request bytes each connection writes once it
	// resumes.
	Tail int64
	// QuietWait is how long a trial may wait, before it starts, for the
	// machine to be quiet: the rest of it busy under QuietCPU percent of one
	// core and all TCP sockets holding under QuietTCPMiB. 0: no wait. Other
	// programs on a shared machine otherwise push the kernel into TCP memory
	// pressure, where it drops segments and backs off for seconds.
	QuietWait   time.Duration
	QuietCPU    float64
	QuietTCPMiB float64
	// NoisyRetries is how many times a trial runs again when the rest of
	// the machine was busier than twice QuietCPU in one of its phases.
	NoisyRetries int
	// StallTimeout bounds the filling of all connections and the wait for
	// the server's gauge; ResumeTimeout bounds one connection's resumption.
	StallTimeout, ResumeTimeout time.Duration
	// Log receives progress; the zero value logs nothing.
	Log zerolog.Logger
}

// Defaults for the 2-core, 24 GiB machine of this project: 1,000 paused
// connections hold about 1 GiB in the server and the kernels.
const (
	DefaultConns         = 1000
	DefaultRepeats       = 5
	DefaultHighWatermark = 256 << 10
	DefaultLowWatermark  = 128 << 10
	DefaultRequestSize   = 4096
	DefaultClientBuf     = 64 << 10
	DefaultClientMSS     = 1460
	DefaultFillParallel  = 50
	DefaultIdleWindow    = 5 * time.Second
	DefaultWindow        = 10 * time.Second
	DefaultSettle        = 2 * time.Second
	DefaultTail          = 0
	DefaultQuietWait     = 10 * time.Minute
	DefaultQuietCPU      = 25
	DefaultQuietTCPMiB   = 256
	DefaultNoisyRetries  = 3
	DefaultStallTimeout  = 120 * time.Second
	DefaultResumeTimeout = 30 * time.Second
)

// Validate checks the figures.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Servers) == 0 {
		errs = append(errs, errors.New("no server"))
	}
	seen := map[string]bool{}
	for _, s := range c.Servers {
		if s.Label == "" || s.Binary == "" || seen[s.Label] {
			errs = append(errs, fmt.Errorf("server %q=%q: want a unique label and a binary", s.Label, s.Binary))
		}
		seen[s.Label] = true
	}
	for name, v := range map[string]int{"repeats": c.Repeats, "conns": c.Conns, "loops": c.Loops, "fill parallel": c.FillParallel} {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s %d: want at least 1", name, v))
		}
	}
	if c.LowWatermark < 0 || c.LowWatermark > c.HighWatermark || c.HighWatermark <= 0 {
		errs = append(errs, fmt.Errorf("watermarks low %d / high %d: need 0 <= low <= high, high > 0", c.LowWatermark, c.HighWatermark))
	}
	if c.Tail < 0 {
		errs = append(errs, fmt.Errorf("tail %d is negative", c.Tail))
	}
	for _, d := range []time.Duration{c.IdleWindow, c.Window, c.StallTimeout, c.ResumeTimeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("duration %v: want a positive one", d))
		}
	}
	if _, err := newStream(c.RequestSize); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Run runs every trial. A failed trial is recorded and the others run; it
// returns early only when ctx ends.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := supported(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("drainload: %w", err)
	}
	for i := range cfg.Servers {
		v, err := harness.BinaryVersion(ctx, cfg.Servers[i].Binary)
		if err != nil {
			return nil, fmt.Errorf("drainload: %w", err)
		}
		cfg.Servers[i].Version = v
	}
	res := &Result{Params: paramsOf(cfg)}
	err := harness.Rotate(cfg.Repeats, len(cfg.Servers), func(r, pos, i int) error {
		srv := cfg.Servers[i]
		t := runTrial(ctx, cfg, srv)
		for retry := 1; retry <= cfg.NoisyRetries && t.Error == "" && t.noisy(cfg.QuietCPU) && ctx.Err() == nil; retry++ {
			cfg.Log.Warn().Str("server", srv.Label).Int("repeat", r).Float64("idle_other_pct", t.IdleOther).
				Float64("paused_other_pct", t.PausedOther).Float64("resume_other_pct", t.ResumeOther).
				Msg("other programs were busy during the trial: running it again")
			t = runTrial(ctx, cfg, srv)
			t.Retries = retry
		}
		t.Repeat, t.Position = r, pos
		res.Trials = append(res.Trials, t)
		ev := cfg.Log.Info()
		if t.Error != "" {
			ev = cfg.Log.Warn().Str("error", t.Error)
		}
		ev.Str("server", t.Server).Int("repeat", r).Float64("idle_cpu_pct", t.IdleCPU).Float64("paused_cpu_pct", t.PausedCPU).
			Float64("resume_p99_ms", t.ResumeP99).Float64("after_drain_p99_ms", t.AfterDrainP99).Msg("drain trial done")
		return ctx.Err()
	})
	res.summarize(cfg.Servers)
	if err != nil {
		return res, fmt.Errorf("drain benchmark interrupted: %w", err)
	}
	return res, nil
}

// runTrial starts srv, measures it and stops it.
func runTrial(ctx context.Context, cfg Config, srv Server) (t Trial) {
	t.Server = srv.Label
	log := cfg.Log.With().Str("server", srv.Label).Logger()
	proc, metrics, err := startServer(ctx, cfg, srv)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	defer func() {
		if t.Error != "" {
			t.ServerLog = proc.LogTail()
		}
		if err := proc.Stop(); err != nil && t.Error == "" {
			t.Error = fmt.Sprintf("stopping the server: %v", err)
		}
	}()
	pids := proc.PIDs()
	if t.QuietWaitS, err = waitQuiet(ctx, cfg, pids); err != nil {
		t.Error = err.Error()
		return t
	}
	_ = harness.Sleep(ctx, cfg.Settle)
	idle, err := procstat.SampleWindow(ctx, pids, cfg.IdleWindow)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	t.IdleCPU, t.IdleRuns, t.IdleOther = idle.Pct, idle.Runs, idle.Other
	k0, err := readKernelCounters()
	if err != nil {
		t.Error = err.Error()
		return t
	}
	defer func() {
		if k1, err := readKernelCounters(); err == nil {
			t.Kernel = k1.sub(k0)
		}
	}()

	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, _ := newStream(cfg.RequestSize)
	d, err := newSockDiag()
	if err != nil {
		t.Error = err.Error()
		return t
	}
	diag := &lockedDiag{d: d}
	log.Info().Int("conns", cfg.Conns).Msg("filling connections until the server stops reading them")
	flows, err := fill(tctx, cfg, proc.Addr(), st, diag)
	defer func() {
		for _, f := range flows {
			_ = f.c.Close()
		}
		cancel()
		for _, f := range flows {
			<-f.done // no writer queries diag any more
		}
		d.close()
	}()
	t.Stalled = len(flows)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	if t.Paused, err = waitPaused(ctx, metrics, cfg.Conns, cfg.StallTimeout); err != nil {
		t.Error = err.Error()
		return t
	}
	_ = harness.Sleep(ctx, cfg.Settle)
	log.Info().Int("paused", t.Paused).Dur("window", cfg.Window).Msg("sampling the server's CPU with every connection paused")
	if mem, err := kernelTCPMemory(); err == nil {
		t.KernelTCPMiB = float64(mem) / (1 << 20)
	}
	paused, err := procstat.SampleWindow(ctx, pids, cfg.Window)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	t.PausedCPU, t.PausedRuns, t.PausedOther = paused.Pct, paused.Runs, paused.Other

	buf, scratch := make([]byte, 256<<10), make([]byte, 256<<10)
	var resume, after []float64
	var backlog []int64
	phase, err := procstat.StartWindow(pids)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	for i, f := range flows {
		s, err := f.drain(diag, buf, scratch, cfg.ResumeTimeout)
		if err != nil {
			t.Error = fmt.Sprintf("connection %d (port %d): %v", i, f.port, err)
			return t
		}
		_ = f.c.Close()
		t.Resumed++
		resume = append(resume, harness.Ms(s.Resume))
		after = append(after, harness.Ms(s.AfterDrain))
		backlog = append(backlog, s.Backlog)
	}
	resumed, err := phase.End(pids, true)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	t.ResumeOther = resumed.Other
	slices.Sort(resume)
	slices.Sort(after)
	t.ResumeP50, t.ResumeP99 = harness.Percentile(resume, 50), harness.Percentile(resume, 99)
	t.AfterDrainP50, t.AfterDrainP99 = harness.Percentile(after, 50), harness.Percentile(after, 99)
	slices.Sort(backlog)
	t.BacklogMiB = float64(backlog[len(backlog)/2]) / (1 << 20)
	if !proc.Running() {
		t.Error = "the server exited during the trial"
	}
	return t
}

// waitQuiet waits up to cfg.QuietWait for the machine to be quiet and
// returns the seconds it waited.
func waitQuiet(ctx context.Context, cfg Config, pids []int) (float64, error) {
	if cfg.QuietWait <= 0 {
		return 0, nil
	}
	start := time.Now()
	for {
		s, err := procstat.SampleWindow(ctx, pids, time.Second)
		if err != nil {
			return 0, err
		}
		mem, err := kernelTCPMemory()
		if err != nil {
			return 0, err
		}
		mib := float64(mem) / (1 << 20)
		waited := time.Since(start)
		if s.Other < cfg.QuietCPU && mib < cfg.QuietTCPMiB {
			return waited.Seconds(), nil
		}
		if waited > cfg.QuietWait {
			return waited.Seconds(), fmt.Errorf("the machine was not quiet within %v: the rest of it busy %.0f%% of a core, TCP sockets holding %.0f MiB (want under %.0f%% and %.0f MiB)",
				cfg.QuietWait, s.Other, mib, cfg.QuietCPU, cfg.QuietTCPMiB)
		}
		if ctx.Err() != nil {
			return waited.Seconds(), ctx.Err()
		}
	}
}

// startServer starts `serve` of srv on free loopback ports and returns it
// with its metrics address.
func startServer(ctx context.Context, cfg Config, srv Server) (*harness.Child, string, error) {
	var metrics string
	p, err := harness.RetryFreePort("127.0.0.1", func(listen string) (*harness.Child, error) {
		var err error
		if metrics, err = harness.FreeAddr("127.0.0.1"); err != nil {
			return nil, err
		}
		return harness.Start(ctx, harness.ChildSpec{Name: "serve-" + srv.Label, Listen: listen, Argv: []string{
			srv.Binary, "serve", "--listen", listen, "--metrics-listen", metrics, "--idle-timeout", "0",
			"--loops", strconv.Itoa(cfg.Loops), "--high-watermark", strconv.Itoa(cfg.HighWatermark),
			"--low-watermark", strconv.Itoa(cfg.LowWatermark), "--log-level", "warn"}})
	})
	if err != nil {
		return nil, "", fmt.Errorf("starting %s: %w", srv.Binary, err)
	}
	return p, metrics, nil
}

// fill opens the connections, FillParallel at a time, each writing until
// it stalls, then checks that each stayed stalled: one the server read on
// from (a slow server, not a paused one) fills again. It returns the flows
// opened so far with the first failure.
// The writers live on with ctx; only the filling is bounded by StallTimeout.
func fill(ctx context.Context, cfg Config, addr string, st *stream, diag *lockedDiag) ([]*flow, error) {
	writers := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.StallTimeout)
	defer cancel()
	maxBytes := int64(64 << 20)
	flows := make([]*flow, 0, cfg.Conns)
	var mu sync.Mutex
	var first error
	failed := func(err error) {
		mu.Lock()
		first = cmpErr(first, err)
		mu.Unlock()
	}
	slots := make(chan struct{}, cfg.FillParallel)
	var wg sync.WaitGroup
	for i := 0; i < cfg.Conns; i++ {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
			break
		}
		f, err := dialFlow(ctx, addr, st, cfg.ClientRcvBuf, cfg.ClientSndBuf, cfg.ClientMSS)
		if err != nil {
			<-slots
			failed(fmt.Errorf("connection %d: %w", i, err))
			break
		}
		flows = append(flows, f)
		go f.write(ctx, writers, diag, maxBytes, cfg.Tail, cfg.ResumeTimeout)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-slots }()
			if err := <-f.stalled; err != nil {
				failed(fmt.Errorf("connection %d did not stall: %w", i, err))
			}
		}(i)
	}
	wg.Wait()
	for first == nil && ctx.Err() == nil {
		_ = harness.Sleep(ctx, stallQuiet)
		var loose []*flow
		for _, f := range flows {
			s, err := diag.query(f.c.RemoteAddr().(*net.TCPAddr), f.c.LocalAddr().(*net.TCPAddr))
			if err != nil {
				return flows, err
			}
			if s.queued == 0 || s.read != f.stallRead.Load() {
				loose = append(loose, f)
			}
		}
		if len(loose) == 0 {
			break
		}
		for _, f := range loose {
			f.refill <- struct{}{}
		}
		for i, f := range loose {
			if err := <-f.stalled; err != nil {
				failed(fmt.Errorf("connection %d of %d filled again did not stall: %w", i, len(loose), err))
			}
		}
	}
	if first == nil && ctx.Err() != nil {
		first = fmt.Errorf("%d connections stalled within %v: %w", len(flows), cfg.StallTimeout, ctx.Err())
	}
	return flows, first
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// waitPaused waits until the server's gauge counts want paused connections.
func waitPaused(ctx context.Context, metrics string, want int, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	got := -1
	for {
		n, err := pausedGauge(ctx, metrics)
		if err != nil {
			return got, err
		}
		got = n
		if got == want {
			return got, nil
		}
		if time.Now().After(deadline) {
			return got, fmt.Errorf("the server counts %d of %d connections paused after %v", got, want, timeout)
		}
		_ = harness.Sleep(ctx, 200*time.Millisecond)
		if ctx.Err() != nil {
			return got, ctx.Err()
		}
	}
}

// pausedGauge reads tidegate_tlv_paused_connections from the server's /metrics.
func pausedGauge(ctx context.Context, addr string) (int, error) {
	const name = "tidegate_tlv_paused_connections"
	vals, err := gometrics.New(addr).Scrape(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the server's metrics: %w", err)
	}
	v, ok := vals[name]
	if !ok {
		return 0, fmt.Errorf("metrics at %s: no %s", addr, name)
	}
	return int(v), nil
}
