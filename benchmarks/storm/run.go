package storm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/fdlimit"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/procstat"
)

// Config is a storm benchmark: for each repeat, each target in turn (the
// order rotated by one each repeat) gets a fresh proxy process.
type Config struct {
	// Targets are the proxies to measure.
	Targets []peers.Kind
	// Repeats is the number of trials per target.
	Repeats int
	// Held sessions are opened before the storm and echo throughout it.
	Held int
	// Storm connections are fired at once after the held sessions are up.
	Storm int
	// Limit is every proxy's concurrent-session limit (peers.RelayConfig.MaxConns).
	Limit int
	// NoFile is every proxy process's descriptor limit (peers.RelayConfig.NoFile).
	NoFile int
	// ProxyCores is every proxy's thread, loop or worker count.
	ProxyCores int
	// Backend is the address of the echo backend (see echo.Server).
	Backend string
	// Sources are the local addresses the client's connections are spread over.
	Sources []net.IP
	// StormParallel bounds storm connections in progress at once; 0 fires all.
	StormParallel int
	// StormTimeout bounds each storm connection, connect to complete echo.
	StormTimeout time.Duration
	// HeldParallel is the held sessions opened at once.
	HeldParallel int
	// HeldInterval is the pause between two echoes of a held session.
	HeldInterval time.Duration
	// EchoTimeout bounds each held session's connect and echo.
	EchoTimeout time.Duration
	// AfterTimeout is how long a new session after the storm may take to be
	// served, attempts of at most EchoTimeout included.
	AfterTimeout time.Duration
	// Executable is the tidegate binary; empty means this program.
	Executable string
	// HAProxy, Nginx and Prlimit are the programs to run; empty means
	// "haproxy", "nginx" and "prlimit" from PATH.
	HAProxy, Nginx, Prlimit string
	// Log receives progress; the zero value logs nothing.
	Log zerolog.Logger
}

// Defaults sized for a 2-core machine whose processes may open at most
// 20,000 files: the storm goes past the session limit and the descriptor
// limit, and the client stays far from its own.
const (
	DefaultHeld          = 500
	DefaultStorm         = 3000
	DefaultLimit         = 600
	DefaultNoFile        = 1500
	DefaultRepeats       = 3
	DefaultStormTimeout  = 5 * time.Second
	DefaultHeldInterval  = 100 * time.Millisecond
	DefaultEchoTimeout   = 5 * time.Second
	DefaultAfterTimeout  = 5 * time.Second
	DefaultHeldParallel  = 64
	clientDescriptorSlop = 64
)

// Validate checks the figures and fills in defaults for zero durations.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Targets) == 0 {
		errs = append(errs, errors.New("no target"))
	}
	for name, v := range map[string]int{"repeats": c.Repeats, "held": c.Held, "storm": c.Storm, "limit": c.Limit, "proxy cores": c.ProxyCores} {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s %d: want at least 1", name, v))
		}
	}
	if c.NoFile < 0 {
		errs = append(errs, fmt.Errorf("nofile %d: want 0 (unchanged) or a limit", c.NoFile))
	}
	if c.Held >= c.Limit {
		errs = append(errs, fmt.Errorf("held %d: want fewer than the limit %d, so that the held sessions fit", c.Held, c.Limit))
	}
	if c.Backend == "" {
		errs = append(errs, errors.New("no backend address"))
	}
	for _, d := range []*time.Duration{&c.StormTimeout, &c.HeldInterval, &c.EchoTimeout, &c.AfterTimeout} {
		if *d < 0 {
			errs = append(errs, fmt.Errorf("duration %v is negative", *d))
		}
	}
	c.StormTimeout = cmp.Or(c.StormTimeout, DefaultStormTimeout)
	c.HeldInterval = cmp.Or(c.HeldInterval, DefaultHeldInterval)
	c.EchoTimeout = cmp.Or(c.EchoTimeout, DefaultEchoTimeout)
	c.AfterTimeout = cmp.Or(c.AfterTimeout, DefaultAfterTimeout)
	if c.HeldParallel <= 0 {
		c.HeldParallel = DefaultHeldParallel
	}
	return errors.Join(errs...)
}

// Trial is one storm against one fresh proxy.
type Trial struct {
	Target string `json:"target"`
	Repeat int    `json:"repeat"`
	// Position is the trial's place in its repeat's order, from 0.
	Position int `json:"position"`
	// Held is what became of the held sessions (zero when they could not
	// be opened: see Error).
	Held HeldResult `json:"held"`
	// Storm is the storm's outcome.
	Storm *StormResult `json:"storm,omitempty"`
	// CPUMs is the proxy's on-CPU time from firing to the last outcome
	// (sum of /proc/PID/task/*/schedstat field 1 over its processes), the
	// held sessions' echoes included; CPUMeasured is false where it could
	// not be read, with the reason in CPUNote.
	CPUMs       float64 `json:"cpu_ms"`
	CPUMeasured bool    `json:"cpu_measured"`
	CPUNote     string  `json:"cpu_note,omitempty"`
	// Alive: the proxy process was still running at the end of the trial,
	// after the storm, the new session and the held sessions' last echo.
	Alive bool `json:"alive"`
	// NewSession: a new session was served after the storm (connect and
	// checked echo), within AfterTimeout; NewSessionAttempts were made.
	NewSession         bool   `json:"new_session"`
	NewSessionAttempts int    `json:"new_session_attempts"`
	NewSessionError    string `json:"new_session_error,omitempty"`
	// ProxyLog is an excerpt of the proxy's output (error lines, else the
	// last lines), kept for failed trials.
	ProxyLog string `json:"proxy_log,omitempty"`
	// StopNote is what stopping the proxy reported, if anything.
	StopNote string `json:"stop_note,omitempty"`
	// Error is an unexpected error that ended the trial early.
	Error string `json:"error,omitempty"`
}

// Failures returns why the trial fails, or nothing: a lost held session, a
// dead or deaf proxy, a storm connection the measurement could not place,
// or an unexpected error.
func (t *Trial) Failures() []string {
	var f []string
	if t.Error != "" {
		f = append(f, "error: "+t.Error)
	}
	if t.Held.Lost > 0 {
		f = append(f, fmt.Sprintf("%d of %d held sessions lost (%s)", t.Held.Lost, t.Held.Count, reasonList(t.Held.Reasons)))
	}
	if t.Error == "" && !t.Alive {
		f = append(f, "the proxy process died")
	}
	if t.Error == "" && !t.NewSession {
		f = append(f, "no new session served after the storm: "+t.NewSessionError)
	}
	if t.Storm != nil && t.Storm.Errored > 0 {
		f = append(f, fmt.Sprintf("%d storm connections errored", t.Storm.Errored))
	}
	if t.Storm != nil && t.Storm.Sum() != t.Storm.Count {
		f = append(f, fmt.Sprintf("storm outcomes add up to %d, not %d", t.Storm.Sum(), t.Storm.Count))
	}
	return f
}

// reasonList writes counts by reason as "closed x3, reset x1".
func reasonList(m map[string]int) string {
	var parts []string
	for _, k := range harness.ByCount(m) {
		parts = append(parts, fmt.Sprintf("%s x%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// checkClientDescriptors fails when this process may not open a descriptor
// for each of sessions connections, beside clientDescriptorSlop: the
// storm's own client must not be what runs out.
func checkClientDescriptors(sessions int) error {
	lim, err := fdlimit.Read()
	if err != nil {
		return err
	}
	return fdlimit.Check(sessions, lim.Soft, "hold or fire fewer",
		fdlimit.Holder{Name: "this client", PerSession: 1, Holds: "a held or storm connection", Reserve: clientDescriptorSlop})
}

// Run runs every trial; a failed trial is recorded and the others still
// run. It returns early only when ctx ends.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("storm: %w", err)
	}
	if err := checkClientDescriptors(cfg.Held + cfg.Storm); err != nil {
		return nil, err
	}
	res := &Result{Params: paramsOf(cfg)}
	err := harness.Rotate(cfg.Repeats, len(cfg.Targets), func(r, pos, i int) error {
		t := runTrial(ctx, cfg, cfg.Targets[i])
		t.Repeat, t.Position = r, pos
		res.Trials = append(res.Trials, t)
		ev := cfg.Log.Info()
		if f := t.Failures(); len(f) > 0 {
			ev = cfg.Log.Warn().Strs("failures", f)
		}
		ev.Str("target", t.Target).Int("repeat", r).Int("held_lost", t.Held.Lost).
			Bool("alive", t.Alive).Bool("new_session", t.NewSession).Msg("storm trial done")
		return ctx.Err()
	})
	res.summarize(cfg.Targets)
	if err != nil {
		return res, fmt.Errorf("storm benchmark interrupted: %w", err)
	}
	return res, nil
}

// runTrial starts a proxy, holds the sessions, fires the storm, checks the
// proxy and stops it.
func runTrial(ctx context.Context, cfg Config, k peers.Kind) (t Trial) {
	t.Target = string(k)
	log := cfg.Log.With().Str("target", string(k)).Logger()
	proxy, err := startProxy(cfg, k)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	defer func() {
		if len(t.Failures()) > 0 {
			t.ProxyLog = proxyLog(proxy)
		}
		if err := proxy.Stop(); err != nil {
			t.StopNote = err.Error()
		}
	}()
	log.Info().Str("addr", proxy.Addr()).Ints("pids", proxy.PIDs()).Int("held", cfg.Held).Msg("opening held sessions")
	held, err := OpenHeld(ctx, HeldConfig{Addr: proxy.Addr(), Count: cfg.Held, Parallel: cfg.HeldParallel, Sources: cfg.Sources,
		Interval: cfg.HeldInterval, Timeout: cfg.EchoTimeout})
	if err != nil {
		t.Error = err.Error()
		return t
	}
	heldStopped := false
	defer func() {
		if !heldStopped {
			t.Held = held.Stop()
		}
	}()
	before, cpuErr := procstat.Read(proxy.PIDs())
	log.Info().Int("storm", cfg.Storm).Msg("firing the storm")
	run, err := Storm(ctx, StormConfig{Addr: proxy.Addr(), Count: cfg.Storm, Parallel: cfg.StormParallel, Sources: cfg.Sources, Timeout: cfg.StormTimeout})
	if err != nil {
		t.Error = err.Error()
		return t
	}
	t.Storm = run.Result
	if cpuErr == nil {
		var after procstat.Sample
		if after, cpuErr = procstat.Read(proxy.PIDs()); cpuErr == nil {
			t.CPUMs, t.CPUMeasured = float64(after.CPUNs-before.CPUNs)/1e6, true
		}
	}
	if cpuErr != nil {
		t.CPUNote = cpuErr.Error()
	}
	run.Close()
	ok, attempts, err := NewSession(ctx, proxy.Addr(), cfg.AfterTimeout, cfg.EchoTimeout)
	t.NewSession, t.NewSessionAttempts = ok, attempts
	if err != nil {
		t.NewSessionError = err.Error()
	}
	t.Held, heldStopped = held.Stop(), true
	t.Alive = proxy.Running()
	return t
}

// startProxy starts a fresh proxy of kind k on a free loopback port (trying
// again when another program took the port first).
func startProxy(cfg Config, k peers.Kind) (*peers.Process, error) {
	p, err := harness.RetryFreePort("127.0.0.1", func(listen string) (*peers.Process, error) {
		return peers.Start(peers.Spec{
			Kind: k,
			Relay: peers.RelayConfig{Listen: listen, Backend: cfg.Backend, Cores: cfg.ProxyCores,
				Sessions: cfg.Limit, MaxConns: cfg.Limit, NoFile: cfg.NoFile},
			Executable: cfg.Executable, HAProxy: cfg.HAProxy, Nginx: cfg.Nginx, Prlimit: cfg.Prlimit,
		})
	})
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", k, err)
	}
	return p, nil
}

// proxyLog returns an excerpt of the proxy's output: its error lines where
// it has any (the first storm can bury them under thousands of warnings),
// else its last lines.
func proxyLog(p *peers.Process) string {
	b, err := os.ReadFile(p.LogPath())
	if err != nil {
		return stripANSI(p.LogTail())
	}
	return logExcerpt(stripANSI(string(b)), 12)
}

// ansiEscape matches the terminal colour codes of a console log.
var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*m")

// stripANSI removes terminal colour codes from s.
func stripANSI(s string) string { return ansiEscape.ReplaceAllString(s, "") }
