package soak

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"
)

// Defaults of Config: the hour-long soak of issue 24.
const (
	DefaultDuration     = 60 * time.Minute
	DefaultSessions     = 9000
	DefaultInterval     = 10 * time.Second
	DefaultWarmup       = 5 * time.Minute
	DefaultReloadEvery  = 4 * time.Minute
	DefaultRestartEvery = 7 * time.Minute
	DefaultHold         = 5 * time.Second
	DefaultRate         = 2
	DefaultLoops        = 2
	DefaultStall        = 60 * time.Second
	// DefaultStalledBurst fits in the kernel's socket buffers on Linux
	// loopback (autotuned to megabytes): it tests that a stalled reader
	// costs no more than its bytes, not the proxy's own queue, which a
	// burst of several MiB fills.
	DefaultStalledBurst = 256 << 10
)

// ChurnHost is the server address the short-lived sessions log in with:
// the proxy routes it to the churn backend (its default group), which is
// restarted now and then; the steady players log in with the proxy's own
// address, routed to a backend that is never restarted.
const ChurnHost = "churn.soak.invalid"

// Config is one soak run.
type Config struct {
	// Executable is the tidegate binary: the proxy (`proxy`) and the two
	// fake backends (`backend`), or serve or push, are started from it.
	Executable string
	// Server is the server under test: ServerProxy (the default),
	// ServerServe or ServerPush. Serve and push have no reload, backend or
	// upgrade events; push has no half-closes.
	Server string
	// Duration is how long the load runs, Interval how often the proxy is
	// sampled, Warmup how long after the start (and after the upgrade)
	// samples are left out of the slope test.
	Duration, Interval, Warmup time.Duration
	// Sessions is the sessions open at once: Churn, Stalled and HalfClose
	// short-lived ones (0: a tenth, a twentieth and a twentieth of
	// Sessions), the rest steady players.
	Sessions, Churn, Stalled, HalfClose int
	// StalledBurst is what each stalled reader sends and then leaves
	// unread for Hold, in bytes (rounded down to 8 KiB frames).
	StalledBurst int
	// Rate is the frames per second each steady player sends.
	Rate int
	// Hold is a short-lived session's cycle: how long a stalled reader
	// reads nothing, and at most how often each worker opens a session.
	Hold time.Duration
	// ReloadEvery sends SIGHUP that often; RestartEvery restarts the churn
	// backend that often; UpgradeAt sends the one SIGUSR2 that long after
	// the start (0: half of Duration; negative: none).
	ReloadEvery, RestartEvery, UpgradeAt time.Duration
	// Loops is the proxy's event loops.
	Loops int
	// Stall fails the steady players when no reply came for that long.
	Stall time.Duration
	// Tolerances are the slope test's, by figure; a figure missing takes
	// DefaultTolerances'.
	Tolerances map[string]Tolerance
	// Dir keeps the proxy's configuration and logs; empty means a new
	// temporary directory, removed after a run that passed.
	Dir string
	// Log gets progress lines; the zero Logger discards them.
	Log zerolog.Logger

	// leak keeps churn connections open (tests: a leak the soak must see).
	leak bool
}

// Figures the soak samples and tests for a trend, in report order.
const (
	FigureRSS        = "rss_bytes"
	FigureHeap       = "heap_live_bytes"
	FigureFDs        = "fds"
	FigureGoroutines = "goroutines_own" // goroutines less gnet's worker pool (Sample.OwnGoroutines)
	FigureThreads    = "threads"
	FigureQueued     = "queued_bytes"
	FigureLatency    = "churn_latency_p99_ms"
)

// Figures lists the figures in report order.
var Figures = []string{FigureRSS, FigureHeap, FigureFDs, FigureGoroutines, FigureThreads, FigureQueued, FigureLatency}

// DefaultTolerances are the slope test's tolerances: generous enough for a
// shared machine's noise (a latency may double in a busy minute; short
// sessions come and go between samples), tight enough that a leak of a
// descriptor, a goroutine or a few KiB per churned session fails within
// the run.
var DefaultTolerances = map[string]Tolerance{
	FigureRSS:        {Abs: 32 << 20, Rel: 0.10},
	FigureHeap:       {Abs: 16 << 20, Rel: 0.10},
	FigureFDs:        {Abs: 64, Rel: 0.05},
	FigureGoroutines: {Abs: 16, Rel: 0.10},
	FigureThreads:    {Abs: 4, Rel: 0},
	FigureQueued:     {Abs: 8 << 20, Rel: 0.50},
	FigureLatency:    {Abs: 50, Rel: 1.0},
}

func (c *Config) defaults() error {
	c.Server = cmp.Or(c.Server, ServerProxy)
	if c.Server == ServerPush {
		c.HalfClose = -1 // a subscriber's half-close ends it: the churn does it
	}
	c.Duration = cmp.Or(c.Duration, DefaultDuration)
	c.Sessions = cmp.Or(c.Sessions, DefaultSessions)
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	c.Warmup = cmp.Or(c.Warmup, min(DefaultWarmup, c.Duration/6))
	c.ReloadEvery = cmp.Or(c.ReloadEvery, DefaultReloadEvery)
	c.RestartEvery = cmp.Or(c.RestartEvery, DefaultRestartEvery)
	c.UpgradeAt = cmp.Or(c.UpgradeAt, c.Duration/2)
	c.Hold = cmp.Or(c.Hold, DefaultHold)
	c.Rate = cmp.Or(c.Rate, DefaultRate)
	c.StalledBurst = cmp.Or(c.StalledBurst, DefaultStalledBurst)
	c.Loops = cmp.Or(c.Loops, DefaultLoops)
	c.Stall = cmp.Or(c.Stall, DefaultStall)
	c.Churn = cmp.Or(c.Churn, c.Sessions/10)
	c.Stalled = cmp.Or(c.Stalled, c.Sessions/20)
	c.HalfClose = max(cmp.Or(c.HalfClose, c.Sessions/20), 0)
	tol := make(map[string]Tolerance, len(DefaultTolerances))
	for k, v := range DefaultTolerances {
		tol[k] = v
	}
	for k, v := range c.Tolerances {
		if _, ok := tol[k]; !ok {
			return fmt.Errorf("tolerance of %q: no such figure (want one of %v)", k, Figures)
		}
		tol[k] = v
	}
	c.Tolerances = tol
	switch {
	case !slices.Contains(Servers, c.Server):
		return fmt.Errorf("server %q: want one of %v", c.Server, Servers)
	case c.Executable == "":
		return errors.New("no tidegate binary to run as the proxy and the backends")
	case c.Interval < time.Second:
		return fmt.Errorf("interval %s: want at least 1s", c.Interval)
	case c.Duration < 2*c.Interval:
		return fmt.Errorf("duration %s: want at least two intervals (%s)", c.Duration, 2*c.Interval)
	case c.Warmup < 0 || c.Warmup >= c.Duration:
		return fmt.Errorf("warm-up %s: want 0 or more and less than the duration %s", c.Warmup, c.Duration)
	case c.Churn < 0 || c.Stalled < 0 || c.HalfClose < 0:
		return fmt.Errorf("churn %d, stalled %d, half-close %d: want 0 or more", c.Churn, c.Stalled, c.HalfClose)
	case c.Sessions-c.Churn-c.Stalled-c.HalfClose < 1:
		return fmt.Errorf("sessions %d leave no steady player after %d churn, %d stalled and %d half-close", c.Sessions, c.Churn, c.Stalled, c.HalfClose)
	case c.Hold < 100*time.Millisecond:
		return fmt.Errorf("hold %s: want at least 100ms", c.Hold)
	case c.StalledBurst < stalledFrameBody || c.StalledBurst > 64<<20:
		return fmt.Errorf("stalled burst %d bytes: want %d..%d", c.StalledBurst, stalledFrameBody, 64<<20)
	case c.Loops < 1:
		return fmt.Errorf("loops %d: want at least 1", c.Loops)
	}
	return nil
}

// steady is the number of steady players.
func (c *Config) steady() int { return c.Sessions - c.Churn - c.Stalled - c.HalfClose }
