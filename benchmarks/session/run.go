package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/players"
	"github.com/tidegate/tidegate/benchmarks/procstat"
)

// Target is a running proxy under test.
type Target struct {
	Name string
	// Addr is where clients connect to reach the backend through it.
	Addr string
	// PIDs are its processes, measured from /proc; empty: no process figures.
	PIDs []int
	// MetricsAddr is where a tidegate proxy serves its metrics and
	// profiles (LaunchOptions.TidegateMetrics); empty otherwise.
	MetricsAddr string
}

// CountedTarget is a fresh copy of a target started under a system call
// counter; Stop ends it, after which the counter's Count is final.
type CountedTarget struct {
	Target
	Counter *peers.SyscallCounter
	Stop    func() error
}

// Config is a whole paired run.
type Config struct {
	Workload string
	Params   Params
	Repeats  int
	// Backend is the fake backend's address: the direct phases connect here.
	Backend string
	Targets []Target
	// StartCounted starts a copy of the named target under a system call
	// counter, for the syscall passes; nil skips them.
	StartCounted func(name string) (CountedTarget, error)
	// SyscallPasses is the number of syscall passes per target.
	SyscallPasses int
	// AppRTT, when positive, is the round-trip time emulated in user space:
	// the clients hold every burst for AppRTT/2 before writing it (the
	// backend, started with the same --reply-delay, holds every echo as
	// long), in the direct and the proxy phases alike.
	AppRTT time.Duration
	// StallTimeout ends a phase that made no progress this long; 0: 20 s.
	StallTimeout time.Duration
	// Players, when set, runs the players workload instead of the echo
	// workload Params describes.
	Players *players.Params
	// SegmentsPID is a process in the clients' network namespace, whose
	// TCP OutSegs the direct phases read; 0 means this process.
	SegmentsPID int
	Setup       Setup
	// Progress, when set, is told what runs and how far it is.
	Progress Progress
	Log      zerolog.Logger
}

// Progress receives the state of the run.
type Progress interface {
	// Phase announces phase i (from 0) of n.
	Phase(i, n int, label string)
	// Echoes reports the echoes received so far in the current phase.
	Echoes(done, total int64)
	// Done ends the display.
	Done()
}

// Run runs cfg.Repeats repeats; each runs, for every target in an order
// rotated by the repeat, a direct and a proxy phase, direct first in even
// repeats and proxy first in odd ones. Then come the syscall passes. A
// phase that fails is recorded with its failure and the run goes on; the
// returned error is for a run that could not be made at all.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Players != nil {
		if err := cfg.Players.Validate(); err != nil {
			return nil, err
		}
		if cfg.AppRTT > 0 {
			return nil, fmt.Errorf("app RTT %v: the players workload does not emulate one", cfg.AppRTT)
		}
	} else if err := cfg.Params.Validate(); err != nil {
		return nil, err
	}
	if cfg.Repeats < 1 {
		return nil, fmt.Errorf("repeats %d: want at least 1", cfg.Repeats)
	}
	if len(cfg.Targets) == 0 {
		return nil, errors.New("no target to measure")
	}
	res := &Result{Workload: cfg.Workload, Params: cfg.Params, Players: cfg.Players, Repeats: cfg.Repeats, Setup: cfg.Setup}
	for _, t := range cfg.Targets {
		res.Targets = append(res.Targets, t.Name)
	}
	type step struct {
		target Target
		kind   string
		repeat int
	}
	var steps []step
	n := len(cfg.Targets)
	for r := 0; r < cfg.Repeats; r++ {
		for _, i := range harness.Order(n, r) {
			t := cfg.Targets[i]
			if r%2 == 0 {
				steps = append(steps, step{t, KindDirect, r}, step{t, KindProxy, r})
			} else {
				steps = append(steps, step{t, KindProxy, r}, step{t, KindDirect, r})
			}
		}
	}
	passes := 0
	if cfg.StartCounted != nil {
		passes = cfg.SyscallPasses
	}
	total := len(steps) + passes*n
	segPID := cfg.SegmentsPID
	segPID = cmp.Or(segPID, os.Getpid())
	// A proxy runs for the whole benchmark and keeps memory from phase to
	// phase: RSS per session is counted from its RSS before its first
	// phase's sessions connected, not from each phase's start.
	freshRSS := map[string]int64{}
	for i, s := range steps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if cfg.Progress != nil {
			cfg.Progress.Phase(i, total, fmt.Sprintf("%s %s repeat %d", s.target.Name, s.kind, s.repeat+1))
		}
		addr, pids, seg := cfg.Backend, []int(nil), segPID
		if s.kind == KindProxy {
			addr, pids = s.target.Addr, s.target.PIDs
			if len(pids) > 0 {
				seg = pids[0]
			}
		}
		var start, loggedIn, before, after procstat.Sample
		var segBefore, segAfter int64
		var probeErr, startErr, loginErr error
		hooks := harness.PhaseHooks{
			Before: func() error {
				if len(pids) > 0 {
					before, probeErr = procstat.Read(pids)
				}
				segBefore, _ = procstat.TCPOutSegs(seg)
				return nil
			},
			After: func() error {
				segAfter, _ = procstat.TCPOutSegs(seg)
				if len(pids) > 0 && probeErr == nil {
					after, probeErr = procstat.Read(pids)
				}
				return nil
			},
		}
		if len(pids) > 0 && cfg.Players != nil {
			hooks.Start = func() { start, startErr = procstat.Read(pids) }
			hooks.LoggedIn = func() { loggedIn, loginErr = procstat.Read(pids) }
		}
		if cfg.Progress != nil {
			hooks.Progress = cfg.Progress.Echoes
		}
		p := cfg.measure(ctx, s.target.Name, s.kind, s.repeat, i, addr, hooks)
		if p.Failure == "" {
			if segAfter > segBefore {
				v := float64(segAfter-segBefore) / p.relayedFrames()
				p.SegmentsPerFrame = &v
			}
			if len(pids) > 0 {
				if probeErr != nil {
					res.note(fmt.Sprintf("%s: process figures unavailable: %v", s.target.Name, probeErr))
				} else {
					cpu := float64(after.CPUNs-before.CPUNs) / p.relayedFrames()
					rss := float64(after.RSSBytes) / (1 << 20)
					p.CPUNsPerFrame, p.RSSMiB = &cpu, &rss
					p.Threads, p.FDs = after.Threads, after.FDs
				}
				if p.Players != nil && probeErr == nil && startErr == nil {
					if _, ok := freshRSS[s.target.Name]; !ok {
						freshRSS[s.target.Name] = start.RSSBytes
					}
					kib := float64(after.RSSBytes-freshRSS[s.target.Name]) / 1024 / float64(p.Players.Sessions)
					p.Players.RSSPerSessionKiB = &kib
					if loginErr == nil {
						us := float64(loggedIn.CPUNs-start.CPUNs) / 1e3 / float64(p.Players.Sessions)
						p.Players.LoginCPUUs = &us
					}
				} else if p.Players != nil && startErr != nil {
					res.note(fmt.Sprintf("%s: RSS per session unavailable: %v", s.target.Name, startErr))
				}
			}
		}
		cfg.logPhase(p)
		res.Phases = append(res.Phases, p)
	}
	for pass := 0; pass < passes; pass++ {
		for j := range cfg.Targets {
			name := cfg.Targets[(j+pass)%n].Name
			i := len(res.Phases)
			if cfg.Progress != nil {
				cfg.Progress.Phase(i, total, fmt.Sprintf("%s syscall pass %d", name, pass+1))
			}
			p := cfg.syscallPass(ctx, name, pass, i)
			cfg.logPhase(p)
			res.Phases = append(res.Phases, p)
		}
	}
	if cfg.Progress != nil {
		cfg.Progress.Done()
	}
	if cfg.AppRTT > 0 {
		res.noteHoldLate(cfg.AppRTT)
	}
	res.summarize()
	return res, nil
}

// measure runs one phase of the workload against addr.
func (cfg *Config) measure(ctx context.Context, target, kind string, repeat, order int, addr string, hooks harness.PhaseHooks) Phase {
	stall := cfg.StallTimeout
	if stall <= 0 {
		stall = defaultStallTimeout
	}
	if cfg.Players != nil {
		run, err := players.Run(ctx, addr, *cfg.Players, stall, hooks)
		return playersPhaseOf(target, kind, repeat, order, *cfg.Players, run, err)
	}
	run, err := runPhase(ctx, addr, cfg.Params, cfg.AppRTT/2, stall, hooks)
	return phaseOf(target, kind, repeat, order, cfg.Params, run, err)
}

// syscallPass runs one proxy phase on a fresh copy of the target under perf.
func (cfg *Config) syscallPass(ctx context.Context, name string, pass, order int) Phase {
	ct, err := cfg.StartCounted(name)
	if err != nil {
		err = fmt.Errorf("starting under perf: %w", err)
		if cfg.Players != nil {
			return playersPhaseOf(name, KindSyscalls, pass, order, *cfg.Players, players.Measurement{}, err)
		}
		return phaseOf(name, KindSyscalls, pass, order, cfg.Params, phaseRun{}, err)
	}
	hooks := harness.PhaseHooks{Before: ct.Counter.Enable, After: ct.Counter.Disable}
	if cfg.Progress != nil {
		hooks.Progress = cfg.Progress.Echoes
	}
	p := cfg.measure(ctx, name, KindSyscalls, pass, order, ct.Addr, hooks)
	stopErr := ct.Stop()
	if p.Failure == "" {
		n, cerr := ct.Counter.Count()
		if cerr != nil {
			p.Failure = fmt.Sprintf("counting system calls: %v (stop: %v)", cerr, stopErr)
		} else {
			v := float64(n) / p.relayedFrames()
			p.SyscallsPerFrame = &v
		}
	}
	return p
}

func (cfg *Config) logPhase(p Phase) {
	ev := cfg.Log.Debug()
	if p.Failure != "" || p.Errors > 0 {
		ev = cfg.Log.Error()
	}
	ev.Str("target", p.Target).Str("kind", p.Kind).Int("repeat", p.Repeat).Float64("roundtrips_per_sec", p.RoundtripsPerSec).
		Float64("p99_ms", p.P99Ms).Int64("errors", p.Errors).Str("failure", p.Failure).Msg("phase done")
}

// phaseOf turns a phase's measurements into a Phase.
func phaseOf(target, kind string, repeat, order int, params Params, run phaseRun, err error) Phase {
	p := Phase{Target: target, Kind: kind, Repeat: repeat, Order: order}
	if err != nil {
		p.Failure = err.Error()
		p.Errors = run.errors
		return p
	}
	secs := run.elapsed.Seconds()
	p.Seconds = secs
	p.Roundtrips = run.roundtrips
	p.RoundtripsPerSec = float64(run.roundtrips) / secs
	p.FramesPerSec = 2 * p.RoundtripsPerSec
	p.MiBPerSec = float64(run.roundtrips) * float64(params.FrameLen()) / secs / (1 << 20)
	ms := func(q float64) float64 { return float64(run.hist.ValueAtQuantile(q)) / 1e6 }
	p.P50Ms, p.P95Ms, p.P99Ms, p.P999Ms = ms(50), ms(95), ms(99), ms(99.9)
	p.MaxMs = float64(run.hist.Max()) / 1e6
	p.Errors = run.errors
	p.ErrorSamples = run.samples
	if run.holdLate > 0 {
		us := float64(run.holdLate) / 1e3
		p.HoldLateUs = &us
	}
	return p
}

// noteHoldLate notes how late the clients' held bursts went out: the
// emulated RTT is at least appRTT, by this much more on the client side.
func (r *Result) noteHoldLate(appRTT time.Duration) {
	late := harness.SpreadOfPresent(validPhases(r.Phases), func(p Phase) *float64 { return p.HoldLateUs })
	if late.N == 0 {
		return
	}
	r.note(fmt.Sprintf("app RTT %v: each client holds a burst %v before writing it, the backend each echo as long; "+
		"the clients' held writes went out %s µs after their due time (mean per phase, median [min–max] over %d phases)",
		appRTT, appRTT/2, late.Short(0), late.N))
}

func (r *Result) note(s string) {
	for _, n := range r.Notes {
		if n == s {
			return
		}
	}
	r.Notes = append(r.Notes, s)
}
