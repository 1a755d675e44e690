package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tidegate/tidegate/benchmarks/procstat"
)

// Default bounds of a child's start and stop.
const (
	DefaultReadyTimeout = 10 * time.Second
	DefaultStopTimeout  = 5 * time.Second
	// LogTailBytes is how much of a child's log LogTail returns at most.
	LogTailBytes = 2000
)

// KeepDirsEnv, when set in this program's environment, keeps the temporary
// directories of stopped children (configuration and log) for a look after
// the run.
const KeepDirsEnv = "TIDEGATE_KEEP_PEER_DIRS"

// Supervisor is a program that runs the child as its own child rather than
// exec'ing it in place (perf stat): the first process of the child's tree is
// the supervisor, and signals go to the process after it.
type Supervisor interface {
	// Command returns the command line that runs argv under the
	// supervisor, and the files the child gets as descriptors 3 and up.
	Command(argv []string) (full []string, extra []*os.File)
	// Started is called once the command has started, to close this
	// program's copies of the extra files.
	Started()
}

// ChildSpec says how to start one child process.
type ChildSpec struct {
	// Name labels the child, its log file and its errors.
	Name string
	// Argv is the command line, program first.
	Argv []string
	// Wrap prefixes the command line with programs that exec the rest in
	// place (ip netns exec NAME, prlimit): the child keeps their pid.
	Wrap []string
	// Env is added to this program's environment, such as GOMAXPROCS=1.
	Env []string
	// Dir receives the log (Name.log); empty means a new temporary
	// directory, removed by Stop.
	Dir string
	// RemoveDir makes Stop (and a failed Start) remove Dir, a temporary
	// directory the caller made for the child, unless KeepDirsEnv is set.
	RemoveDir bool
	// Log, when set, receives the child's output instead of a log file
	// (LogTail is then empty).
	Log *os.File
	// Listen is the address the child accepts connections on once ready;
	// empty means it is ready once started.
	Listen string
	// Ready, when set, is polled after Listen accepts until it returns nil,
	// for a child that is ready later than it listens.
	Ready func(context.Context) error
	// Processes is how many processes the child's tree has once ready
	// (nginx's master and workers), the supervisor not counted; 0 means 1.
	Processes int
	// Supervisor, when set, runs the program under it.
	Supervisor Supervisor
	// ReadyTimeout bounds the wait for readiness; 0 means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// StopTimeout bounds the wait after SIGTERM before SIGKILL; 0 means
	// DefaultStopTimeout.
	StopTimeout time.Duration
}

// Child is a started child process. Its methods may be called from one
// goroutine at a time, except Exited, Running and ExitError.
type Child struct {
	spec    ChildSpec
	argv    []string // as run, wrappers included
	cmd     *exec.Cmd
	dir     string
	ownDir  bool
	logPath string
	logFile *os.File
	done    chan struct{}
	waitErr error
	pids    []int
	stopped bool
}

// Start starts the child s describes and waits until it is ready: Listen
// accepts a connection, Ready (if set) returns nil and the process tree has
// Processes processes. A child that exits first, or is not ready in time,
// fails Start with its log's tail; either way no process is left behind.
func Start(ctx context.Context, s ChildSpec) (*Child, error) {
	if len(s.Argv) == 0 {
		if s.RemoveDir && s.Dir != "" && os.Getenv(KeepDirsEnv) == "" {
			os.RemoveAll(s.Dir)
		}
		return nil, fmt.Errorf("%s: empty command line", s.Name)
	}
	if s.ReadyTimeout <= 0 {
		s.ReadyTimeout = DefaultReadyTimeout
	}
	if s.StopTimeout <= 0 {
		s.StopTimeout = DefaultStopTimeout
	}
	c := &Child{spec: s, dir: s.Dir, ownDir: s.RemoveDir && s.Dir != ""}
	if s.Log == nil {
		if c.dir == "" {
			d, err := os.MkdirTemp("", "tidegate-"+s.Name+"-")
			if err != nil {
				return nil, fmt.Errorf("%s: work directory: %w", s.Name, err)
			}
			c.dir, c.ownDir = d, true
		}
		c.logPath = filepath.Join(c.dir, s.Name+".log")
		lf, err := os.Create(c.logPath)
		if err != nil {
			c.cleanup()
			return nil, fmt.Errorf("%s: log file: %w", s.Name, err)
		}
		c.logFile = lf
	}
	argv, extra := s.Argv, []*os.File(nil)
	if s.Supervisor != nil {
		argv, extra = s.Supervisor.Command(argv)
	}
	c.argv = append(append([]string{}, s.Wrap...), argv...)
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	out := s.Log
	if out == nil {
		out = c.logFile
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.ExtraFiles = extra
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		c.cleanup()
		return nil, fmt.Errorf("%s: starting %s: %w", s.Name, c.commandLine(), err)
	}
	if s.Supervisor != nil {
		s.Supervisor.Started()
	}
	c.cmd = cmd
	c.done = make(chan struct{})
	go func() {
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	if err := c.awaitReady(ctx); err != nil {
		// Stop's own error (a kill) matters less than why it was not ready.
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// awaitReady polls until the child is ready, it exits, ctx ends or the
// ready timeout passes.
func (c *Child) awaitReady(ctx context.Context) error {
	s := c.spec
	ctx, cancel := context.WithTimeout(ctx, s.ReadyTimeout)
	defer cancel()
	what := "starting"
	check := func() error {
		if s.Listen != "" {
			what = "accepting connections on " + s.Listen
			conn, err := net.DialTimeout("tcp", s.Listen, 200*time.Millisecond)
			if err != nil {
				return err
			}
			conn.Close()
		}
		if s.Ready != nil {
			what = "ready"
			if err := s.Ready(ctx); err != nil {
				return err
			}
		}
		what = "running its processes"
		return c.readTree()
	}
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s: %s exited before %s: %v\n%s", s.Name, c.commandLine(), what, c.waitErr, c.LogTail())
		default:
		}
		if Sleep(ctx, 20*time.Millisecond) != nil {
			if ctx.Err() == context.DeadlineExceeded {
				if errors.Is(err, errFewProcesses) {
					return nil // it serves; a worker slow to show is no reason to fail
				}
				return fmt.Errorf("%s: not %s after %v: %w\n%s", s.Name, what, s.ReadyTimeout, err, c.LogTail())
			}
			return fmt.Errorf("%s: waiting for it to be %s: %w", s.Name, what, ctx.Err())
		}
	}
}

// Sleep waits d, or less if ctx ends first; it returns ctx's error then.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errFewProcesses is readTree's error for a tree still short of processes.
var errFewProcesses = errors.New("fewer processes than wanted")

// readTree reads the child's process tree into pids, failing while it has
// fewer processes than the spec wants.
func (c *Child) readTree() error {
	tree, err := procstat.ProcessTree(c.cmd.Process.Pid)
	if err != nil {
		return err
	}
	if c.spec.Supervisor != nil {
		tree = tree[1:]
	}
	if len(tree) == 0 {
		return fmt.Errorf("process tree of pid %d: only its supervisor", c.cmd.Process.Pid)
	}
	c.pids = tree
	if want := max(c.spec.Processes, 1); len(tree) < want {
		return fmt.Errorf("process tree of pid %d has %d: %w", c.cmd.Process.Pid, len(tree), errFewProcesses)
	}
	return nil
}

func (c *Child) commandLine() string { return strings.Join(c.argv, " ") }

// Name returns the child's label.
func (c *Child) Name() string { return c.spec.Name }

// Addr returns the address it accepts connections on.
func (c *Child) Addr() string { return c.spec.Listen }

// PID returns the program's pid (after its supervisor, if any), for CPU
// and memory sampling.
func (c *Child) PID() int {
	if len(c.pids) > 0 {
		return c.pids[0]
	}
	return c.cmd.Process.Pid
}

// PIDs returns the processes to measure: the program and its children as
// they were once it was ready, its supervisor left out.
func (c *Child) PIDs() []int { return c.pids }

// Exited returns a channel closed once the child has exited and was reaped.
func (c *Child) Exited() <-chan struct{} { return c.done }

// Running reports whether the child is still running.
func (c *Child) Running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// ExitError returns how the child ended, once Running is false: nil for a
// clean exit or while it runs.
func (c *Child) ExitError() error {
	select {
	case <-c.done:
		return c.waitErr
	default:
		return nil
	}
}

// Dir returns the directory that holds its log (and a caller's files).
func (c *Child) Dir() string { return c.dir }

// LogPath returns the file holding the child's output (in Dir, so gone
// after Stop when Dir was temporary); empty when ChildSpec.Log was set.
func (c *Child) LogPath() string { return c.logPath }

// LogTail returns the last LogTailBytes of the child's output, trimmed.
func (c *Child) LogTail() string {
	if c.logPath == "" {
		return ""
	}
	f, err := os.Open(c.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > LogTailBytes {
		f.Seek(st.Size()-LogTailBytes, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, LogTailBytes))
	return strings.TrimSpace(string(b))
}

// Stop ends the child: SIGTERM to the program (not to a supervisor, which
// exits with it) unless it has exited already, SIGKILL after the stop
// timeout. It removes a temporary directory. The error says whether it had
// to be killed or could not be waited for; how it exited is ExitError.
// Stop after Stop does nothing.
func (c *Child) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.spec.StopTimeout)
	defer cancel()
	return c.StopContext(ctx)
}

// StopContext is Stop with the wait after SIGTERM bounded by ctx instead of
// the stop timeout.
func (c *Child) StopContext(ctx context.Context) error {
	if c.stopped {
		return nil
	}
	c.stopped = true
	defer c.cleanup()
	target := c.PID()
	select {
	case <-c.done: // it has exited and was reaped: its pid is no longer its own
	default:
		_ = syscall.Kill(target, syscall.SIGTERM)
	}
	var err error
	select {
	case <-c.done:
	case <-ctx.Done():
		_ = syscall.Kill(target, syscall.SIGKILL)
		_ = c.cmd.Process.Kill()
		<-c.done
		err = fmt.Errorf("%s: pid %d did not stop on SIGTERM and was killed: %w", c.spec.Name, target, ctx.Err())
	}
	var ee *exec.ExitError
	if err == nil && c.waitErr != nil && !errors.As(c.waitErr, &ee) {
		err = fmt.Errorf("%s: waiting for pid %d: %w", c.spec.Name, target, c.waitErr)
	}
	return err
}

func (c *Child) cleanup() {
	if c.logFile != nil {
		c.logFile.Close()
	}
	if c.ownDir && os.Getenv(KeepDirsEnv) == "" {
		os.RemoveAll(c.dir)
	}
}
