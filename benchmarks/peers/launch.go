package peers

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tidegate/tidegate/benchmarks/procstat"
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
}

// Process is a started proxy or backend.
type Process struct {
	// Name is the kind, or "backend".
	Name string
	// Addr is the address it accepts connections on.
	Addr string
	// MetricsAddr is where a tidegate proxy serves its metrics and
	// profiles; empty when it does not.
	MetricsAddr string

	cmd     *exec.Cmd
	dir     string
	ownDir  bool
	logPath string
	logFile *os.File
	done    chan struct{}
	waitErr error
	pids    []int
	sys     *SyscallCounter
}

// FreeAddr returns host:port with a port that was free a moment ago.
func FreeAddr(host string) (string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("finding a free port on %s: %w", host, err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
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
	case KindTidegate, KindTidegateRaw:
		exe, err := executable(s.Executable)
		if err != nil {
			return nil, err
		}
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
			argv = append(argv, "--metrics-listen", s.MetricsListen)
		}
		env = append(env, s.Env...)
	case KindGoproxy:
		exe, err := executable(s.PeerExecutable)
		if err != nil {
			return nil, err
		}
		procs := s.GoMaxProcs
		if procs == 0 {
			procs = r.Cores
		}
		argv = []string{exe, "peer", "goproxy", "--listen", r.Listen, "--backend", r.Backend, "--log-level", "warn"}
		env = []string{"GOMAXPROCS=" + strconv.Itoa(procs)}
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
	p := &Process{Name: string(s.Kind), Addr: r.Listen, dir: r.Dir, ownDir: ownDir, sys: s.Syscalls}
	if s.Kind == KindTidegate || s.Kind == KindTidegateRaw {
		p.MetricsAddr = s.MetricsListen
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
	if err := p.start(wrap, argv, env, s.ReadyTimeout, want); err != nil {
		return nil, err
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
	return StartProgram(ProgramSpec{Name: "backend", Listen: s.Listen, Argv: argv, Wrap: s.Wrap, Dir: s.Dir})
}

// ProgramSpec says how to start any server program the way proxies and the
// backend are started.
type ProgramSpec struct {
	// Name labels the process, its log file and its errors.
	Name string
	// Listen is the address it accepts connections on once ready.
	Listen string
	// Argv is the command line; Wrap prefixes it.
	Argv, Wrap []string
	// Dir receives its log; empty means a new temporary directory, removed
	// by Stop.
	Dir string
	// Env is added to this process's environment, such as GOMAXPROCS=1.
	Env []string
	// Syscalls, when set, runs the program under perf to count its system calls.
	Syscalls *SyscallCounter
}

// StartProgram starts s.Argv and waits until it accepts connections on
// s.Listen (at most 10 seconds).
func StartProgram(s ProgramSpec) (*Process, error) {
	if len(s.Argv) == 0 {
		return nil, fmt.Errorf("%s: empty command line", s.Name)
	}
	p := &Process{Name: s.Name, Addr: s.Listen, dir: s.Dir, sys: s.Syscalls}
	if p.dir == "" {
		var err error
		if p.dir, err = os.MkdirTemp("", "tidegate-"+s.Name+"-"); err != nil {
			return nil, fmt.Errorf("%s: work directory: %w", s.Name, err)
		}
		p.ownDir = true
	}
	if err := p.start(s.Wrap, s.Argv, s.Env, 0, 1); err != nil {
		return nil, err
	}
	return p, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// start runs wrap+argv, waits until Addr accepts a connection and the
// process tree has at least want processes (besides perf).
func (p *Process) start(wrap, argv, env []string, timeout time.Duration, want int) error {
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	var extra []*os.File
	if p.sys != nil {
		argv, extra = p.sys.wrap(argv)
	}
	full := append(append([]string{}, wrap...), argv...)
	p.logPath = filepath.Join(p.dir, p.Name+".log")
	lf, err := os.Create(p.logPath)
	if err != nil {
		return fmt.Errorf("%s: log file: %w", p.Name, err)
	}
	p.logFile = lf
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), env...)
	cmd.ExtraFiles = extra
	if err := cmd.Start(); err != nil {
		lf.Close()
		p.cleanup()
		return fmt.Errorf("%s: starting %s: %w", p.Name, strings.Join(full, " "), err)
	}
	if p.sys != nil {
		p.sys.started()
	}
	p.cmd = cmd
	p.done = make(chan struct{})
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-p.done:
			err := fmt.Errorf("%s: %s exited before accepting connections on %s: %v\n%s",
				p.Name, strings.Join(full, " "), p.Addr, p.waitErr, p.LogTail())
			p.cleanup()
			return err
		default:
		}
		c, err := net.DialTimeout("tcp", p.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			p.Stop()
			return fmt.Errorf("%s: not accepting connections on %s after %v: %w\n%s", p.Name, p.Addr, timeout, err, p.LogTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		tree, err := procstat.ProcessTree(cmd.Process.Pid)
		if err == nil && p.sys != nil {
			tree = tree[1:] // perf itself
		}
		if err == nil && len(tree) >= want {
			p.pids = tree
			return nil
		}
		if time.Now().After(deadline) {
			p.pids = tree
			if len(tree) == 0 {
				p.Stop()
				return fmt.Errorf("%s: process tree of pid %d: %v", p.Name, cmd.Process.Pid, err)
			}
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Exited returns a channel closed once the program has exited and was
// reaped, for timing its exit (ExitError then says how); nil before Start.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Running reports whether the program is still running: false once it has
// exited (or was never started or was stopped).
func (p *Process) Running() bool {
	if p.cmd == nil || p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// ExitError returns how the program ended, once Running is false: nil for
// a clean exit or before it ended.
func (p *Process) ExitError() error {
	if p.done == nil {
		return nil
	}
	select {
	case <-p.done:
		return p.waitErr
	default:
		return nil
	}
}

// PIDs returns the processes to measure: the program and its children
// (nginx's workers), without perf.
func (p *Process) PIDs() []int { return p.pids }

// Dir returns the directory holding its configuration and log.
func (p *Process) Dir() string { return p.dir }

// LogPath returns the file that holds the process's output (in Dir, so
// it is gone after Stop when Dir was temporary).
func (p *Process) LogPath() string { return p.logPath }

// LogTail returns the last lines of the process's output.
func (p *Process) LogTail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

// Stop sends SIGTERM to the program (not to perf, which then exits with
// it), unless it has exited already, waits up to 5 seconds, then kills it.
// It removes a temporary work directory.
func (p *Process) Stop() error {
	if p.cmd == nil {
		return nil
	}
	target := p.cmd.Process.Pid
	if len(p.pids) > 0 {
		target = p.pids[0]
	}
	select {
	case <-p.done: // it has exited and was reaped: its pid is no longer its own
	default:
		syscall.Kill(target, syscall.SIGTERM)
	}
	var err error
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		syscall.Kill(target, syscall.SIGKILL)
		p.cmd.Process.Kill()
		<-p.done
		err = fmt.Errorf("%s: pid %d did not stop within 5s of SIGTERM and was killed", p.Name, target)
	}
	var ee *exec.ExitError
	if p.waitErr != nil && !errors.As(p.waitErr, &ee) && err == nil {
		err = fmt.Errorf("%s: %w", p.Name, p.waitErr)
	}
	p.cmd = nil
	p.cleanup()
	return err
}

func (p *Process) cleanup() {
	if p.logFile != nil {
		p.logFile.Close()
	}
	if p.ownDir && os.Getenv("TIDEGATE_KEEP_PEER_DIRS") == "" {
		os.RemoveAll(p.dir)
	}
}

// Syscalls returns the counter the process runs under, or nil.
func (p *Process) Syscalls() *SyscallCounter { return p.sys }
