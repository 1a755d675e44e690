package peers

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// Spec says how to start one proxy under test.
type Spec struct {
	Kind  Kind
	Relay RelayConfig
	// GoMaxProcs is GOMAXPROCS for goproxy; 0 means Relay.Cores.
	GoMaxProcs int
	// Executable is the tidegate binary (`proxy`, for tidegate and
	// tidegate-raw); empty means this program.
	Executable string
	// PeerExecutable is the tidegate-bench binary (`peer goproxy`, for
	// goproxy); empty means this program.
	PeerExecutable string
	// HAProxy and Nginx are the programs to run; empty means "haproxy" and
	// "nginx" from PATH.
	HAProxy, Nginx string
	// Gate is Gate's program (KindGate, KindGateOffline), which its users
	// build themselves; GateSecret is the Velocity forwarding secret its
	// configuration carries (the others read RelayConfig.ForwardingKeyFile).
	Gate, GateSecret string
	// Wrap prefixes the command line, such as ip netns exec NAME.
	Wrap []string
	// CPUProfile, when set, makes a tidegate proxy write a Go CPU profile
	// there when it stops.
	CPUProfile string
	// MetricsListen, when set, makes a tidegate proxy serve its metrics and
	// profiles there (--metrics-listen); Process.MetricsAddr gives it back.
	MetricsListen string
	// Env is added to a tidegate proxy's environment (after GOMAXPROCS,
	// which it may override), such as GODEBUG=memprofilerate=1 or GOGC=50.
	Env []string
	// Syscalls, when set, runs the proxy under perf to count its system calls.
	Syscalls *SyscallCounter
	// ReadyTimeout bounds the wait for the listener; 0 means 10 seconds.
	ReadyTimeout time.Duration
	// Prlimit is the prlimit program that applies Relay.NoFile; empty means
	// "prlimit" from PATH (util-linux).
	Prlimit string
}

// BackendSpec says how to start the fake Minecraft backend (tidegate backend).
type BackendSpec struct {
	Listen string
	Loops  int
	// Executable is the tidegate binary; empty means this program.
	Executable string
	Wrap       []string
	// Dir receives its log; empty means a new temporary directory.
	Dir string
	// ReplyDelay, when positive, holds every play echo this long
	// (tidegate backend --reply-delay).
	ReplyDelay time.Duration
	// ChunkReplies answers chunk requests with large frames (tidegate
	// backend --chunk-replies).
	ChunkReplies bool
	// VelocityKeyFile, when set, makes the backend expect Velocity modern
	// forwarding signed with the secret in this file.
	VelocityKeyFile string
	// JoinDelay, when positive, holds the Login (play) of 1.20.2 clients
	// this long (tidegate backend --join-delay).
	JoinDelay time.Duration
}

// Process is a started proxy or backend: its child process, with what
// only a proxy has.
type Process struct {
	*harness.Child
	// MetricsAddr is where a tidegate proxy serves its metrics and
	// profiles; empty when it does not.
	MetricsAddr string

	sys *SyscallCounter
}

func executable(path string) (string, error) {
	if path != "" {
		return path, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locating this program to re-run: %w", err)
	}
	return exe, nil
}

// Start writes the proxy's configuration into s.Relay.Dir (a new temporary
// directory if empty), starts it and waits until it accepts connections.
func Start(s Spec) (*Process, error) {
	r := s.Relay
	if r.Cores < 1 {
		return nil, fmt.Errorf("%s: cores %d: want at least 1", s.Kind, r.Cores)
	}
	if r.Sessions < 1 {
		r.Sessions = 64
	}
	ownDir := false
	if r.Dir == "" {
		d, err := os.MkdirTemp("", "tidegate-"+string(s.Kind)+"-")
		if err != nil {
			return nil, fmt.Errorf("%s: work directory: %w", s.Kind, err)
		}
		r.Dir, ownDir = d, true
	}
	write := func(name, text string) (string, error) {
		p := filepath.Join(r.Dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return "", fmt.Errorf("%s: writing %s: %w", s.Kind, p, err)
		}
		return p, nil
	}
	var argv, env []string
	switch s.Kind {
	case KindTidegate, KindTidegateRaw, KindTidegateOffline, KindTidegateOnline:
		exe, err := executable(s.Executable)
		if err != nil {
			return nil, err
		}
		r.Login = map[Kind]string{KindTidegateOffline: "offline", KindTidegateOnline: "online"}[s.Kind]
		cfg, err := write("tidegate.yaml", TidegateConfig(r, s.Kind == KindTidegateRaw))
		if err != nil {
			return nil, err
		}
		argv = []string{exe, "proxy", "--config", cfg, "--log-level", "warn"}
		// As many loops as the peers have threads or workers, and one P
		// more, which is what tidegate runs with unless told otherwise
		// (cmd/tidegate's spareP); its CPU is counted whole either way.
		env = []string{"GOMAXPROCS=" + strconv.Itoa(max(r.Cores, 1)+1)}
		if s.CPUProfile != "" {
			argv = append(argv, "--cpuprofile", s.CPUProfile)
		}
		if s.MetricsListen != "" {
			// --pprof: the heap figures come from /debug/pprof/heap.
			argv = append(argv, "--metrics-listen", s.MetricsListen, "--pprof")
		}
		env = append(env, s.Env...)
	case KindGoproxy:
		exe, err := executable(s.PeerExecutable)
		if err != nil {
			return nil, err
		}
		procs := s.GoMaxProcs
		procs = cmp.Or(procs, r.Cores)
		argv = []string{exe, "peer", "goproxy", "--listen", r.Listen, "--backend", r.Backend, "--log-level", "warn"}
		env = []string{"GOMAXPROCS=" + strconv.Itoa(procs)}
	case KindGate, KindGateOffline:
		if s.Gate == "" {
			return nil, fmt.Errorf("%s: no Gate program given (--gate-bin)", s.Kind)
		}
		cfg, err := write("config.yml", GateConfig(r, s.Kind == KindGate, s.GateSecret))
		if err != nil {
			return nil, err
		}
		argv = []string{s.Gate, "--config", cfg}
		// As many Ps as tidegate has: its loops and one more.
		env = []string{"GOMAXPROCS=" + strconv.Itoa(max(r.Cores, 1)+1)}
	case KindHAProxy, KindHAProxySplice:
		cfg, err := write("haproxy.cfg", HAProxyConfig(r, s.Kind == KindHAProxySplice))
		if err != nil {
			return nil, err
		}
		argv = []string{orDefault(s.HAProxy, "haproxy"), "-db", "-f", cfg}
	case KindNginx:
		cfg, err := write("nginx.conf", NginxConfig(r))
		if err != nil {
			return nil, err
		}
		argv = []string{orDefault(s.Nginx, "nginx"), "-p", r.Dir, "-c", cfg, "-e", filepath.Join(r.Dir, "error.log")}
	default:
		return nil, fmt.Errorf("unknown target %q: want one of %s", s.Kind, kindList())
	}
	want := 1
	if s.Kind == KindNginx {
		want = 1 + r.Cores // master and workers
	}
	wrap := s.Wrap
	if r.NoFile > 0 {
		// prlimit sets both limits and execs the rest: the proxy keeps its
		// pid, and as the hard limit is lowered it cannot raise it again.
		wrap = append(NoFileWrap(s.Prlimit, r.NoFile), wrap...)
	}
	cs := harness.ChildSpec{Name: string(s.Kind), Argv: argv, Wrap: wrap, Env: env, Dir: r.Dir, RemoveDir: ownDir,
		Listen: r.Listen, Processes: want, ReadyTimeout: s.ReadyTimeout}
	if s.Syscalls != nil {
		cs.Supervisor = s.Syscalls
	}
	c, err := harness.Start(context.Background(), cs)
	if err != nil {
		return nil, err
	}
	p := &Process{Child: c, sys: s.Syscalls}
	if s.Kind.IsTidegate() {
		p.MetricsAddr = s.MetricsListen
	}
	return p, nil
}

// NoFileWrap returns the command prefix that runs a program with n as both
// its soft and hard descriptor limit: prlimit (empty means "prlimit" from
// PATH) --nofile=n:n --.
func NoFileWrap(prlimit string, n int) []string {
	return []string{orDefault(prlimit, "prlimit"), fmt.Sprintf("--nofile=%d:%d", n, n), "--"}
}

// StartBackend starts `tidegate backend` and waits until it accepts connections.
func StartBackend(s BackendSpec) (*Process, error) {
	exe, err := executable(s.Executable)
	if err != nil {
		return nil, err
	}
	loops := max(s.Loops, 1)
	argv := []string{exe, "backend", "--listen", s.Listen, "--loops", strconv.Itoa(loops), "--log-level", "warn"}
	if s.ReplyDelay > 0 {
		argv = append(argv, "--reply-delay", s.ReplyDelay.String())
	}
	if s.ChunkReplies {
		argv = append(argv, "--chunk-replies")
	}
	if s.JoinDelay > 0 {
		argv = append(argv, "--join-delay", s.JoinDelay.String())
	}
	if s.VelocityKeyFile != "" {
		argv = append(argv, "--forwarding", "velocity", "--forwarding-key-file", s.VelocityKeyFile)
	}
	c, err := harness.Start(context.Background(), harness.ChildSpec{Name: "backend", Listen: s.Listen, Argv: argv, Wrap: s.Wrap, Dir: s.Dir})
	if err != nil {
		return nil, err
	}
	return &Process{Child: c}, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
