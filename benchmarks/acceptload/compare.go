package acceptload

import (
	"cmp"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/procstat"
	"github.com/tidegate/tidegate/internal/revision"
)

// Defaults of a comparison.
const (
	DefaultRepeats = 5
	DefaultWarmup  = 1000
	DefaultLoops   = 1
)

// Server is one server under test: a binary Compare starts as `BIN serve`,
// or (Binary empty) a running server at Addr, whose CPU is read when PID is
// set.
type Server struct {
	Label  string `json:"label"`
	Binary string `json:"binary,omitempty"`
	// Revision is the binary's VCS stamp (vcs.revision, "-dirty" when
	// vcs.modified), empty when it has none.
	Revision string `json:"revision,omitempty"`
	Addr     string `json:"addr,omitempty"`
	PID      int    `json:"pid,omitempty"`
}

// BinaryServers returns a Server for each binary, labelled by its file name
// (the whole path where two names are the same), with its VCS stamp.
func BinaryServers(bins []string) ([]Server, error) {
	names := map[string]int{}
	for _, b := range bins {
		names[filepath.Base(b)]++
	}
	out := make([]Server, 0, len(bins))
	seen := map[string]bool{}
	for _, b := range bins {
		if seen[b] {
			return nil, fmt.Errorf("acceptload: server binary %s given twice", b)
		}
		seen[b] = true
		st, err := os.Stat(b)
		if err != nil {
			return nil, fmt.Errorf("acceptload: server binary: %w", err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("acceptload: server binary %s is not an executable file (mode %v)", b, st.Mode())
		}
		label := filepath.Base(b)
		if names[label] > 1 {
			label = b
		}
		out = append(out, Server{Label: label, Binary: b, Revision: binaryRevision(b)})
	}
	return out, nil
}

// binaryRevision returns the VCS stamp Go wrote into a binary, or else the
// version `BIN version` prints (make build sets it to git describe), or
// empty when it has neither ("dev").
func binaryRevision(path string) string {
	if bi, err := buildinfo.ReadFile(path); err == nil {
		if rev := revision.VCS(bi); rev != "" {
			return rev
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := harness.BinaryVersion(ctx, path)
	if err != nil {
		return ""
	}
	v, ok := strings.CutPrefix(out, "tidegate ")
	if !ok || v == "dev" || strings.ContainsAny(v, " \n") {
		return ""
	}
	return v
}

// CompareConfig is a comparison of servers over repeats.
type CompareConfig struct {
	Servers []Server
	// Load is the measured run of each trial; its Addr is set per trial.
	Load LoadConfig
	// Repeats is the trials per server; 0 means DefaultRepeats.
	Repeats int
	// Warmup is the connections made before the measured run (not
	// measured); 0 means DefaultWarmup, negative none.
	Warmup int
	// Loops is the server's --loops; 0 means DefaultLoops.
	Loops int
	// GoMaxProcs, when positive, is the server's GOMAXPROCS.
	GoMaxProcs int
	// Syscalls adds, after the measured repeats, as many trials per started
	// server under perf, counting its system calls during the measured run
	// (they vary with timing: epoll waits, futex wake-ups, sleeps).
	Syscalls bool
	// Log receives progress.
	Log zerolog.Logger
}

// Trial is one measured run against one server.
type Trial struct {
	Repeat int    `json:"repeat"`
	Server string `json:"server"`
	// Syscalls marks a trial under perf: it has SyscallsPerConn, and its
	// CPU is not reported (perf adds to it).
	Syscalls bool   `json:"syscalls,omitempty"`
	Result   Result `json:"result"`
	// ServerCPUUsPerConn is the server's on-CPU time over the run divided
	// by the connections attempted; ServerSlicesPerConn the times its
	// threads were put on a CPU, per connection. Absent when not measured.
	ServerCPUUsPerConn  *float64 `json:"server_cpu_us_per_conn,omitempty"`
	ServerSlicesPerConn *float64 `json:"server_slices_per_conn,omitempty"`
	// ClientCPUUsPerConn is this process's on-CPU time per connection.
	ClientCPUUsPerConn *float64 `json:"client_cpu_us_per_conn,omitempty"`
	// OtherCPUUsPerConn is the machine's busy CPU time (/proc/stat) beyond
	// the server's and the client's, per connection: other processes and
	// kernel work charged to neither. Large values mean a disturbed trial.
	OtherCPUUsPerConn *float64 `json:"other_cpu_us_per_conn,omitempty"`
	// SyscallsPerConn is the system calls of the server per connection.
	SyscallsPerConn *float64 `json:"syscalls_per_conn,omitempty"`
	// Failure says why the trial failed; empty when it passed.
	Failure string `json:"failure,omitempty"`
}

// Summary is one server's figures over its trials, median [min–max].
type Summary struct {
	Server              Server         `json:"server"`
	Trials              int            `json:"trials"`
	Failed              int            `json:"failed"`
	ConnsPerSec         harness.Spread `json:"conns_per_sec"`
	ServerCPUUsPerConn  harness.Spread `json:"server_cpu_us_per_conn"`
	ServerSlicesPerConn harness.Spread `json:"server_slices_per_conn"`
	ClientCPUUsPerConn  harness.Spread `json:"client_cpu_us_per_conn"`
	OtherCPUUsPerConn   harness.Spread `json:"other_cpu_us_per_conn"`
	P50Us               harness.Spread `json:"p50_us"`
	P99Us               harness.Spread `json:"p99_us"`
	SyscallsPerConn     harness.Spread `json:"syscalls_per_conn"`
}

// Ratio is one server's medians divided by the first server's (0 where
// either is missing).
type Ratio struct {
	Server             string  `json:"server"`
	Baseline           string  `json:"baseline"`
	ConnsPerSec        float64 `json:"conns_per_sec"`
	ServerCPUUsPerConn float64 `json:"server_cpu_us_per_conn"`
	P50Us              float64 `json:"p50_us"`
	P99Us              float64 `json:"p99_us"`
	SyscallsPerConn    float64 `json:"syscalls_per_conn"`
}

// Comparison is what Compare measured.
type Comparison struct {
	Trials    []Trial   `json:"trials"`
	Summaries []Summary `json:"summaries"`
	Ratios    []Ratio   `json:"ratios,omitempty"`
	// Failures lists every failed trial; OK is true when there are none.
	Failures []string `json:"failures,omitempty"`
	OK       bool     `json:"ok"`
}

// Compare runs cfg.Repeats trials per server, alternating between them,
// then as many syscall trials when cfg.Syscalls. The error is for a configuration that cannot
// run or a canceled ctx; failed trials are in the Comparison.
func Compare(ctx context.Context, cfg CompareConfig) (*Comparison, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("acceptload: no server to measure")
	}
	cfg.Repeats = cmp.Or(cfg.Repeats, DefaultRepeats)
	if cfg.Repeats < 1 {
		return nil, fmt.Errorf("acceptload: repeats %d: want at least 1", cfg.Repeats)
	}
	cfg.Warmup = cmp.Or(cfg.Warmup, DefaultWarmup)
	cfg.Loops = cmp.Or(cfg.Loops, DefaultLoops)
	probe := cfg.Load
	probe.Addr = "probe"
	if _, err := probe.withDefaults(); err != nil {
		return nil, err
	}
	if cfg.Syscalls {
		if err := peers.PerfAvailable(); err != nil {
			return nil, fmt.Errorf("acceptload: counting system calls: %w", err)
		}
	}
	cmp := &Comparison{}
	trials := func(syscalls bool) error {
		return harness.Rotate(cfg.Repeats, len(cfg.Servers), func(r, _, i int) error {
			if syscalls && cfg.Servers[i].Binary == "" {
				return nil // a server already running cannot be started under perf
			}
			t, err := runTrial(ctx, cfg, cfg.Servers[i], r+1, syscalls)
			cmp.Trials = append(cmp.Trials, t)
			return err
		})
	}
	if err := trials(false); err != nil {
		return nil, err
	}
	if cfg.Syscalls {
		if err := trials(true); err != nil {
			return nil, err
		}
	}
	cmp.summarize(cfg.Servers)
	return cmp, nil
}

// serveArgv is the command line that starts bin as a TLV echo server.
func serveArgv(cfg CompareConfig, bin, addr string) []string {
	return []string{bin, "serve", "--listen", addr, "--loops", strconv.Itoa(cfg.Loops), "--log-level", "warn"}
}

// runTrial measures one server once. The error is for ctx only; anything
// else that goes wrong fails the trial.
func runTrial(ctx context.Context, cfg CompareConfig, s Server, repeat int, syscalls bool) (Trial, error) {
	t := Trial{Repeat: repeat, Server: s.Label, Syscalls: syscalls}
	fail := func(format string, args ...any) (Trial, error) {
		t.Failure = fmt.Sprintf(format, args...)
		cfg.Log.Error().Str("server", s.Label).Int("repeat", repeat).Msg(t.Failure)
		return t, ctx.Err()
	}
	addr, pids := s.Addr, []int(nil)
	if s.PID > 0 {
		pids = []int{s.PID}
	}
	var proc *harness.Child
	var counter *peers.SyscallCounter
	if s.Binary != "" {
		var err error
		if addr, err = harness.FreeAddr("127.0.0.1"); err != nil {
			return fail("%v", err)
		}
		spec := harness.ChildSpec{Name: "serve", Listen: addr, Argv: serveArgv(cfg, s.Binary, addr)}
		if cfg.GoMaxProcs > 0 {
			spec.Env = []string{"GOMAXPROCS=" + strconv.Itoa(cfg.GoMaxProcs)}
		}
		if syscalls {
			dir, err := os.MkdirTemp("", "tidegate-acceptload-")
			if err != nil {
				return fail("directory for perf's output: %v", err)
			}
			defer os.RemoveAll(dir)
			if counter, err = peers.NewSyscallCounter(dir); err != nil {
				return fail("%v", err)
			}
			spec.Supervisor = counter
		}
		if proc, err = harness.Start(ctx, spec); err != nil {
			return fail("starting %s: %v", s.Binary, err)
		}
		defer proc.Stop()
		pids = proc.PIDs()
	}
	if cfg.Warmup > 0 {
		w := cfg.Load
		w.Addr, w.Conns = addr, cfg.Warmup
		res, err := Run(ctx, w)
		if err != nil {
			return fail("warm-up: %v", err)
		}
		if res.Failed() {
			return fail("warm-up against %s: %d of %d connections failed: %v", addr, res.Errors, res.Conns, res.FirstErrors)
		}
	}
	if counter != nil {
		if err := counter.Enable(); err != nil {
			return fail("%v", err)
		}
	}
	var before procstat.Sample
	var cpuErr error
	if len(pids) > 0 {
		before, cpuErr = procstat.Read(pids)
	}
	client0, clientErr := procstat.SelfCPU()
	mach0, busyErr := procstat.MachineCPU()
	load := cfg.Load
	load.Addr = addr
	res, err := Run(ctx, load)
	if err != nil {
		return fail("%v", err)
	}
	t.Result = res
	mach1, err := procstat.MachineCPU()
	if err != nil {
		busyErr = err
	}
	client1, err := procstat.SelfCPU()
	if err != nil {
		clientErr = err
	}
	client := int64(client1 - client0)
	if clientErr == nil {
		t.ClientCPUUsPerConn = perConn(float64(client)/1e3, res.Conns)
	}
	if len(pids) > 0 && cpuErr == nil {
		after, err := procstat.Read(pids)
		if err != nil {
			return fail("server CPU after the run (did it exit?): %v", err)
		}
		if !syscalls {
			server := after.CPUNs - before.CPUNs
			t.ServerCPUUsPerConn = perConn(float64(server)/1e3, res.Conns)
			t.ServerSlicesPerConn = perConn(float64(after.Slices-before.Slices), res.Conns)
			if busyErr == nil && clientErr == nil {
				other := (mach1.Busy - mach0.Busy) - server - client
				t.OtherCPUUsPerConn = perConn(float64(other)/1e3, res.Conns)
				if mine := server + client; other*10 > mine {
					cfg.Log.Warn().Str("server", s.Label).Int("repeat", repeat).Float64("other_cpu_us_per_conn", *t.OtherCPUUsPerConn).
						Msg("the machine was busy with more than the server and the client (over a tenth more): this trial may be disturbed")
				}
			}
		}
	}
	if counter != nil {
		if err := counter.Disable(); err != nil {
			return fail("%v", err)
		}
	}
	if res.Failed() {
		return fail("%d of %d connections failed (%d timed out): %v", res.Errors, res.Conns, res.Timeouts, res.FirstErrors)
	}
	if proc != nil {
		if !proc.Running() {
			return fail("%s exited during the run: %v\n%s", s.Binary, proc.ExitError(), proc.LogTail())
		}
		if err := proc.Stop(); err != nil {
			return fail("stopping %s: %v", s.Binary, err)
		}
	}
	if counter != nil {
		n, err := counter.Count()
		if err != nil {
			return fail("%v", err)
		}
		t.SyscallsPerConn = perConn(float64(n), res.Conns)
	}
	cfg.Log.Info().Str("server", s.Label).Int("repeat", repeat).Bool("syscalls", syscalls).
		Float64("conns_per_sec", res.ConnsPerSec).Float64("p50_us", res.P50Us).Float64("p99_us", res.P99Us).
		Msg("trial done")
	return t, ctx.Err()
}

func perConn(v float64, conns int) *float64 {
	if conns == 0 {
		return nil
	}
	x := v / float64(conns)
	return &x
}

// summarize fills the summaries, ratios and verdict from the trials.
func (c *Comparison) summarize(servers []Server) {
	c.Summaries, c.Ratios, c.Failures = nil, nil, nil
	for _, s := range servers {
		sum := Summary{Server: s}
		var measured, counted []Trial
		for _, t := range c.Trials {
			switch {
			case t.Server != s.Label:
			case t.Failure != "":
				sum.Failed++
				c.Failures = append(c.Failures, fmt.Sprintf("%s %s: %s", s.Label, trialName(t), t.Failure))
			case t.Syscalls:
				counted = append(counted, t)
			default:
				measured = append(measured, t)
			}
		}
		sum.Trials = len(measured)
		sum.ConnsPerSec = harness.SpreadOf(measured, func(t Trial) float64 { return t.Result.ConnsPerSec })
		sum.P50Us = harness.SpreadOf(measured, func(t Trial) float64 { return t.Result.P50Us })
		sum.P99Us = harness.SpreadOf(measured, func(t Trial) float64 { return t.Result.P99Us })
		sum.ServerCPUUsPerConn = harness.SpreadOfPresent(measured, func(t Trial) *float64 { return t.ServerCPUUsPerConn })
		sum.ServerSlicesPerConn = harness.SpreadOfPresent(measured, func(t Trial) *float64 { return t.ServerSlicesPerConn })
		sum.ClientCPUUsPerConn = harness.SpreadOfPresent(measured, func(t Trial) *float64 { return t.ClientCPUUsPerConn })
		sum.OtherCPUUsPerConn = harness.SpreadOfPresent(measured, func(t Trial) *float64 { return t.OtherCPUUsPerConn })
		sum.SyscallsPerConn = harness.SpreadOfPresent(counted, func(t Trial) *float64 { return t.SyscallsPerConn })
		c.Summaries = append(c.Summaries, sum)
	}
	if len(c.Summaries) > 1 {
		b := c.Summaries[0]
		for _, s := range c.Summaries[1:] {
			c.Ratios = append(c.Ratios, Ratio{Server: s.Server.Label, Baseline: b.Server.Label,
				ConnsPerSec:        ratio(s.ConnsPerSec, b.ConnsPerSec),
				ServerCPUUsPerConn: ratio(s.ServerCPUUsPerConn, b.ServerCPUUsPerConn),
				P50Us:              ratio(s.P50Us, b.P50Us),
				P99Us:              ratio(s.P99Us, b.P99Us),
				SyscallsPerConn:    ratio(s.SyscallsPerConn, b.SyscallsPerConn),
			})
		}
	}
	c.OK = len(c.Failures) == 0 && len(c.Trials) > 0
	if len(c.Trials) == 0 {
		c.Failures = append(c.Failures, "no trial ran")
	}
}

func trialName(t Trial) string {
	if t.Syscalls {
		return "syscall trial " + strconv.Itoa(t.Repeat)
	}
	return "repeat " + strconv.Itoa(t.Repeat)
}

// ratio divides the medians, 0 where either spread is empty.
func ratio(a, b harness.Spread) float64 {
	r, _ := harness.MedianRatio(a, b)
	return r
}
