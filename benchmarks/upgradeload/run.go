package upgradeload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/fdlimit"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/internal/procs"
)

// Defaults of Config.
const (
	DefaultSessions        = 9000
	DefaultInterval        = 100 * time.Millisecond
	DefaultRepeats         = 3
	DefaultWarmup          = 3 * time.Second
	DefaultBaseline        = 5 * time.Second
	DefaultLoops           = 2
	DefaultConnectParallel = 64
	DefaultWriters         = 4
	DefaultUpgradeTimeout  = 150 * time.Second
	DefaultEchoTimeout     = 15 * time.Second
	DefaultQuietWait       = 2 * time.Minute
	DefaultQuietCPU        = 25
	DefaultNoisyRetries    = 2
)

// DrainTimeout is the proxy's shutdown.drain_timeout, which also bounds the
// old process's hand-over.
const DrainTimeout = 60 * time.Second

// Config is a run: Repeats trials, each on a fresh proxy.
type Config struct {
	// Executable is the tidegate binary, run as `EXE proxy`.
	Executable string
	// Sessions is how many sessions go through the proxy at once.
	Sessions int
	// Interval is how often each session sends a message.
	Interval time.Duration
	// Repeats is the number of trials.
	Repeats int
	// Warmup runs before the baseline window, Baseline is that window's
	// length, Settle how long the upgrade window goes on after the old
	// process exited (0: the greater of 1 s and 5 intervals).
	Warmup, Baseline, Settle time.Duration
	// Loops is the proxy's event loops.
	Loops int
	// ConnectParallel is how many sessions are dialed at once.
	ConnectParallel int
	// Writers is how many goroutines send the sessions' messages.
	Writers int
	// UpgradeTimeout bounds the wait from the signal to the old process's
	// exit.
	UpgradeTimeout time.Duration
	// EchoTimeout bounds the wait for the last echoes once sending stopped,
	// and the new-session check.
	EchoTimeout time.Duration
	// QuietWait is how long each trial may wait, before it starts, for the
	// rest of the machine to be busy under QuietCPU percent of one core
	// (over one second); 0 does not wait.
	QuietWait time.Duration
	QuietCPU  float64
	// NoisyRetries is how many times a trial runs again when the rest of
	// the machine used more than twice QuietCPU in one of its windows.
	NoisyRetries int
	// HealthPollDuring, when above 0, polls /healthz that often from the
	// signal on; 0 polls it only once the old process has exited, so that
	// no connection reaches the listeners while they are handed over.
	HealthPollDuring time.Duration
	// Dir keeps each trial's configuration and the proxy's log, in
	// trial-N/; empty means a new temporary directory (kept too).
	Dir string
	// Log gets progress lines; the zero Logger discards them.
	Log zerolog.Logger

	// echo serves each backend connection instead of echo (tests).
	echo func(net.Conn)
	// env is added to the proxy's environment (tests).
	env []string
}

func (c *Config) defaults() error {
	c.Sessions = cmp.Or(c.Sessions, DefaultSessions)
	c.Repeats = cmp.Or(c.Repeats, DefaultRepeats)
	c.Loops = cmp.Or(c.Loops, DefaultLoops)
	c.ConnectParallel = cmp.Or(c.ConnectParallel, DefaultConnectParallel)
	c.Writers = cmp.Or(c.Writers, DefaultWriters)
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	c.Warmup = cmp.Or(c.Warmup, DefaultWarmup)
	c.Baseline = cmp.Or(c.Baseline, DefaultBaseline)
	c.UpgradeTimeout = cmp.Or(c.UpgradeTimeout, DefaultUpgradeTimeout)
	c.EchoTimeout = cmp.Or(c.EchoTimeout, DefaultEchoTimeout)
	c.Settle = cmp.Or(c.Settle, max(time.Second, 5*c.Interval))
	c.QuietCPU = cmp.Or(c.QuietCPU, DefaultQuietCPU)
	if c.NoisyRetries < 0 {
		return fmt.Errorf("noisy retries %d: want 0 or more", c.NoisyRetries)
	}
	switch {
	case c.Executable == "":
		return errors.New("no tidegate binary to run as the proxy")
	case c.Sessions < 1:
		return fmt.Errorf("sessions %d: want at least 1", c.Sessions)
	case c.Sessions >= 1<<31:
		return fmt.Errorf("sessions %d: want fewer than 2^31", c.Sessions)
	case c.Repeats < 1:
		return fmt.Errorf("repeats %d: want at least 1", c.Repeats)
	case c.Interval < time.Millisecond:
		return fmt.Errorf("interval %s: want at least 1ms", c.Interval)
	case c.Warmup < 2*c.Interval:
		return fmt.Errorf("warm-up %s: want at least two intervals (%s), so that every session has an echo before the baseline", c.Warmup, 2*c.Interval)
	case c.Baseline < 2*c.Interval:
		return fmt.Errorf("baseline %s: want at least two intervals (%s)", c.Baseline, 2*c.Interval)
	case c.Settle < 2*c.Interval:
		return fmt.Errorf("settle %s: want at least two intervals (%s)", c.Settle, 2*c.Interval)
	case c.Loops < 1:
		return fmt.Errorf("loops %d: want at least 1", c.Loops)
	case c.ConnectParallel < 1:
		return fmt.Errorf("connect parallel %d: want at least 1", c.ConnectParallel)
	case c.Writers < 1:
		return fmt.Errorf("writers %d: want at least 1", c.Writers)
	}
	return nil
}

// Run runs cfg.Repeats trials. It returns an error only when none could
// start (a bad configuration, too few descriptors); a failed trial is in
// the result (Result.OK false, Result.Failures).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	lim, err := fdlimit.Raise()
	if err != nil {
		return nil, err
	}
	if err := fits(cfg.Sessions, lim); err != nil {
		return nil, err
	}
	if err := harness.BecomeSubreaper(); err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		if cfg.Dir, err = os.MkdirTemp("", "tidegate-upgrade-"); err != nil {
			return nil, fmt.Errorf("work directory for the proxies' logs: %w", err)
		}
	}
	res := &Result{Params: paramsOf(cfg), FDLimit: lim, Dir: cfg.Dir}
	for r := 1; r <= cfg.Repeats && ctx.Err() == nil; r++ {
		t := runTrial(ctx, cfg, r, 0)
		for attempt := 1; attempt <= cfg.NoisyRetries && ctx.Err() == nil; attempt++ {
			if t.Noisy = noisy(t, cfg.QuietCPU); t.Noisy == "" {
				break
			}
			cfg.Log.Warn().Int("repeat", r).Str("noisy", t.Noisy).Msg("the machine was busy with something else: this trial runs again")
			res.Noisy = append(res.Noisy, t)
			t = runTrial(ctx, cfg, r, attempt)
		}
		t.Noisy = noisy(t, cfg.QuietCPU)
		res.Trials = append(res.Trials, t)
		ev := cfg.Log.Info()
		if len(t.Failures) > 0 {
			ev = cfg.Log.Error().Strs("failures", t.Failures)
		}
		ev.Int("repeat", r).Int("sessions", t.Sessions).Int("kept", t.Kept).Float64("handover_ms", t.HandoverMs).
			Float64("upgrade_gap_max_ms", t.Upgrade.MaxMs).Float64("upgrade_gap_p99_ms", t.Upgrade.P99Ms).
			Float64("baseline_gap_max_ms", t.Baseline.MaxMs).Str("proxy_log", t.ProxyLog).Msg("trial done")
	}
	if err := ctx.Err(); err != nil && len(res.Trials) < cfg.Repeats {
		res.Interrupted = err.Error()
	}
	res.summarize()
	return res, nil
}

// proxyConfig is the proxy's configuration: a raw listener on listen, one
// group with backend, no session limit, no idle timeout.
func proxyConfig(listen, backend string, loops int) string {
	return fmt.Sprintf(`# written by tidegate-bench bench upgrade (benchmarks/upgradeload)
listeners:
  - listen: %s
    mode: raw
    group: main
groups:
  main:
    backends:
      - addr: %s
loops: %d
limits:
  max_sessions: 0
  idle_timeout: 0s
  connection_rate: 0          # every session comes from 127.0.0.1
  login_rate: 0
  max_sessions_per_subnet: 0
  subnet_connection_rate: 0
  subnet_login_rate: 0
shutdown:
  drain_timeout: %ds
`, listen, backend, loops, int(DrainTimeout/time.Second))
}

// noisy says why trial t's figures were disturbed by other programs: the
// rest of the machine used more than twice quiet percent of one core in a
// window; "" when it did not (or no quiet figure is set).
func noisy(t Trial, quiet float64) string {
	if quiet <= 0 {
		return ""
	}
	for _, w := range []struct {
		name string
		cpu  CPUWindow
	}{{"baseline", t.BaselineCPU}, {"upgrade", t.UpgradeCPU}} {
		if w.cpu.OtherPct > 2*quiet {
			return fmt.Sprintf("other programs used %.0f%% of a core in the %s window (over twice --quiet-cpu %.0f%%)", w.cpu.OtherPct, w.name, quiet)
		}
	}
	return ""
}

// runTrial runs one trial on a fresh proxy and echo backend; attempt
// counts its runs again after noisy ones.
func runTrial(ctx context.Context, cfg Config, repeat, attempt int) (t Trial) {
	t = Trial{Repeat: repeat, Sessions: cfg.Sessions, BaselineCPU: unknownCPU, UpgradeCPU: unknownCPU, QuietBusyPct: -1}
	fails := newFailureLog()
	log := cfg.Log.With().Int("repeat", repeat).Logger()
	defer func() {
		t.Failures = fails.summary(20)
		t.SessionFailures = fails.sessionCount()
	}()
	if cfg.QuietWait > 0 {
		waited, busy := waitQuiet(ctx, cfg.QuietWait, cfg.QuietCPU)
		t.QuietWaitS, t.QuietBusyPct = waited.Seconds(), busy
		log.Info().Float64("waited_s", t.QuietWaitS).Float64("busy_pct_of_a_core", busy).Msg("machine quiet check")
		if err := ctx.Err(); err != nil {
			fails.trial("interrupted while waiting for a quiet machine: %v", err)
			return t
		}
	}
	t.Attempt = attempt
	dir := filepath.Join(cfg.Dir, "trial-"+strconv.Itoa(repeat))
	if attempt > 0 {
		dir += "-again-" + strconv.Itoa(attempt)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fails.trial("trial directory: %v", err)
		return t
	}
	be, err := startEcho(cfg.echo)
	if err != nil {
		fails.trial("%v", err)
		return t
	}
	defer be.Close()
	resetConns := func() { be.EachConn(resetClose) } // every backend connection (see clients.close)
	listen, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		fails.trial("%v", err)
		return t
	}
	metrics, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		fails.trial("%v", err)
		return t
	}
	cfgPath := filepath.Join(dir, "tidegate.yaml")
	if err := os.WriteFile(cfgPath, []byte(proxyConfig(listen, be.Addr().String(), cfg.Loops)), 0o644); err != nil {
		fails.trial("writing the proxy configuration %s: %v", cfgPath, err)
		return t
	}
	argv := []string{cfg.Executable, "proxy", "--config", cfgPath, "--metrics-listen", metrics, "--log-level", "info", "--log-format", "json"}
	env := append([]string{"GOTRACEBACK=all"}, cfg.env...)
	proc, err := harness.Start(ctx, harness.ChildSpec{Name: "tidegate-proxy", Listen: listen, Argv: argv, Dir: dir, Env: env})
	if err != nil {
		fails.trial("%v", err)
		return t
	}
	t.ProxyLog = proc.LogPath()
	defer func() {
		if err := proc.Stop(); err != nil {
			fails.trial("stopping the old proxy: %v", err)
		}
		for _, pid := range harness.KillMarked(cfgPath) { // what a failed upgrade left
			fails.trial("pid %d (a proxy on %s) was still running at the end of the trial: killed", pid, cfgPath)
		}
	}()
	t.OldPID = proc.PID()
	hc := newHealthClient()
	defer hc.close()
	if pid, err := hc.waitPID(metrics, 10*time.Second, func(int) bool { return true }); err != nil {
		fails.trial("before the upgrade: %v", err)
		return t
	} else if pid != t.OldPID {
		fails.trial("before the upgrade, http://%s/healthz says pid %d, the proxy started is pid %d", metrics, pid, t.OldPID)
		return t
	}

	cs := newClients(cfg.Sessions, cfg.Interval, fails)
	defer cs.close(nil)
	start := time.Now()
	if err := cs.connect(ctx, listen, cfg.ConnectParallel); err != nil {
		fails.trial("%v", err)
		return t
	}
	log.Info().Int("sessions", cfg.Sessions).Dur("took", time.Since(start)).Int("old_pid", t.OldPID).Msg("sessions connected; warming up")
	cs.startWriters(cfg.Writers)
	if harness.Sleep(ctx, cfg.Warmup) != nil {
		fails.trial("interrupted in the warm-up: %v", ctx.Err())
		return t
	}
	for _, s := range cs.sess {
		if s.recv.Load() <= 1 && !s.failed.Load() { // the first came back in connect
			fails.session(s, kindNoEcho, fmt.Sprintf("%d messages sent by the end of the %s warm-up, no echo but the first", s.sent.Load(), cfg.Warmup))
		}
	}

	// Baseline.
	cs.setPhase(phaseBaseline)
	u0 := readUsage(t.OldPID)
	bStart := time.Now()
	if harness.Sleep(ctx, cfg.Baseline) != nil {
		fails.trial("interrupted in the baseline: %v", ctx.Err())
		return t
	}
	u1 := readUsage(t.OldPID)
	baseWindow := time.Since(bStart)
	t.BaselineCPU = cpuBetween(u0, u1)

	// Upgrade.
	gaveUp := watchLog(t.ProxyLog, msgUpgradeFailed) // from the log's end before the signal
	defer gaveUp.stop()
	stuck := false
	u2 := readUsage(t.OldPID)
	cs.setPhase(phaseUpgrade)
	sig := time.Now()
	if err := syscall.Kill(t.OldPID, syscall.SIGUSR2); err != nil {
		fails.trial("SIGUSR2 to the proxy (pid %d): %v", t.OldPID, err)
		return t
	}
	log.Info().Int("old_pid", t.OldPID).Msg("SIGUSR2 sent")
	watch := hc.watchNewPID(metrics, t.OldPID, sig, cfg.HealthPollDuring)
	defer watch.stop()
	var exitAt time.Time
	timeout := time.NewTimer(cfg.UpgradeTimeout)
	defer timeout.Stop()
	select {
	case <-proc.Exited():
		exitAt = time.Now()
	case line := <-gaveUp.found:
		fails.trial("the old proxy (pid %d) gave the upgrade up %s after SIGUSR2: %.400s", t.OldPID, time.Since(sig).Round(time.Millisecond), line)
	case <-timeout.C:
		stuck = true
		fails.trial("the old proxy (pid %d) had not exited %s after SIGUSR2 (new pid from /healthz: %d)", t.OldPID, cfg.UpgradeTimeout, watch.pid.Load())
	case <-ctx.Done():
		fails.trial("interrupted during the upgrade: %v", ctx.Err())
	}
	watch.start()
	if exitAt.IsZero() {
		watch.wait(2 * time.Second)
		// What the sessions saw until now, before anything is stopped.
		cs.setPhase(phaseAfter)
		gaveUpAfter := time.Since(sig)
		t.Baseline = cs.gaps(phaseBaseline, baseWindow)
		t.Upgrade = cs.gaps(phaseUpgrade, gaveUpAfter)
		quiet := max(time.Second, 10*cfg.Interval)
		held, echoing, cutoff := 0, 0, cs.now()-int64(quiet)
		for _, s := range cs.sess {
			switch {
			case s.failed.Load():
			case s.lastAt.Load() < cutoff:
				held++
			default:
				echoing++
			}
		}
		fails.trial("%s after the signal, %d sessions had had no echo for over %s (held), %d were echoing, %d had failed",
			gaveUpAfter.Round(time.Millisecond), held, quiet, echoing, fails.sessionCount())
		cs.closing.Store(true) // what ends from here on is this tool's doing
		if stuck {
			// For the report: Go's runtime writes every goroutine's stack
			// to the log on SIGQUIT (GOTRACEBACK=all), and exits.
			quit := []int{t.OldPID}
			if pid := int(watch.pid.Load()); pid != 0 {
				quit = append(quit, pid)
			}
			for _, pid := range quit { // one at a time: both write to the one log
				if syscall.Kill(pid, syscall.SIGQUIT) == nil {
					fails.trial("sent SIGQUIT to pid %d: its goroutines are in %s", pid, t.ProxyLog)
				}
				for deadline := time.Now().Add(3 * time.Second); procs.Alive(pid) && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}
		t.NewPID = int(watch.pid.Load())
		cs.setPhase(phaseAfter)
		cs.close(resetConns) // so that the new process's drain has nothing to wait for
		stopProcess(&t, fails, t.NewPID)
		readLog(&t, fails, false)
		return t
	}
	t.HandoverMs = harness.Ms(exitAt.Sub(sig))
	t.OldExit = "exit status 0"
	if err := proc.ExitError(); err != nil {
		t.OldExit = err.Error()
		fails.trial("the old proxy (pid %d) ended after SIGUSR2 with %v, want exit status 0", t.OldPID, err)
	}
	log.Info().Float64("handover_ms", t.HandoverMs).Str("old_exit", t.OldExit).Msg("the old process exited; settling")
	_ = harness.Sleep(ctx, cfg.Settle)
	cs.setPhase(phaseAfter)
	upWindow := time.Since(sig)
	t.NewPID = int(watch.wait(10 * time.Second))
	if t.NewPID != 0 {
		t.UpgradeCPU = cpuBetween(u2, readUsage(t.NewPID))
		if cfg.HealthPollDuring > 0 {
			t.NewHealthMs = harness.Ms(time.Duration(watch.at.Load()))
		}
	} else {
		fails.trial("no new process answered http://%s/healthz within 10s of the old one's exit", metrics)
	}

	// A new session through the new process.
	if err := newSession(listen, uint32(cfg.Sessions), cfg.EchoTimeout); err != nil {
		fails.trial("a new session after the upgrade: %v", err)
	} else {
		t.NewSession = true
	}
	if t.NewPID != 0 {
		if pid, err := hc.pid(metrics); err != nil || pid != t.NewPID {
			fails.trial("after the upgrade, http://%s/healthz says pid %d (%v), want the new process %d", metrics, pid, err, t.NewPID)
		}
	}

	// The last echoes, and what each session got.
	cs.stopWriters()
	cs.waitEchoes(cfg.EchoTimeout)
	exitNs := int64(exitAt.Sub(cs.base))
	for _, s := range cs.sess {
		t.Echoes += int64(s.recv.Load())
		if s.failed.Load() {
			continue
		}
		if r, n := s.recv.Load(), s.sent.Load(); r != n {
			fails.session(s, kindMissing, fmt.Sprintf("%d of %d echoes arrived within %s of the last send", r, n, cfg.EchoTimeout))
			continue
		}
		if s.lastAt.Load() > exitNs {
			t.Kept++
		} else {
			fails.session(s, kindMissing, "no echo after the old process exited")
		}
	}
	t.Baseline = cs.gaps(phaseBaseline, baseWindow)
	t.Upgrade = cs.gaps(phaseUpgrade, upWindow)
	cs.close(resetConns)
	log.Info().Int("kept", t.Kept).Int("new_pid", t.NewPID).Msg("sessions closed; stopping the new process")
	stopProcess(&t, fails, t.NewPID)
	readLog(&t, fails, true)
	if err := be.Failure(); err != nil {
		fails.trial("%v", err)
	}
	return t
}

// stopProcess sends SIGTERM to the new proxy and waits for it to be gone:
// the drain ends at once, its sessions having been closed, but may take
// DrainTimeout; past that and 20 s more it is killed.
func stopProcess(t *Trial, fails *failureLog, pid int) {
	if pid == 0 {
		return
	}
	status, early, err := harness.StopPID(pid, DrainTimeout+20*time.Second)
	if early {
		t.NewExit = strings.TrimSpace("gone before SIGTERM " + status)
		return
	}
	if err != nil {
		fails.trial("the new proxy after SIGTERM: %v", err)
	}
	t.NewExit = status
	if status == "" {
		t.NewExit = "gone (not this process's child: status unknown)"
	} else if status != "exit status 0" {
		fails.trial("the new proxy (pid %d) ended after SIGTERM with %s, want exit status 0", pid, status)
	}
}
