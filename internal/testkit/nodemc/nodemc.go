// Package nodemc runs node-minecraft-protocol (npm minecraft-protocol,
// pinned in js/package.json) clients and servers for tests: third-party
// Minecraft Java implementations of every version from 1.7 to 26.1, with
// online mode, so that tidegate is tested against code it did not write.
//
// The scripts are js/client.js and js/server.js (their comments say what
// they do); their packages are installed with
//
//	npm ci --prefix internal/testkit/nodemc/js
//
// which make test runs when node_modules is missing. Without node or
// node_modules a test that needs them is skipped, saying so, except under
// CI=true (.ci/run), where that fails it.
//
// Every node process is in a process group of its own; the test's cleanup
// kills the group and fails the test if any process of it is left.
package nodemc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/logbuf"
)

// ScriptDir is where the scripts and their package.json are, from the
// module root.
const ScriptDir = "internal/testkit/nodemc/js"

// InstallCommand installs the scripts' packages, from the module root.
const InstallCommand = "npm ci --prefix " + ScriptDir

// env is node and the scripts' folder.
type env struct {
	node string
	dir  string
}

var (
	envOnce sync.Once
	envVal  env
	envErr  error
)

// lookup finds node and the installed scripts, or skips the test (fails it
// under CI=true) with what to install.
func lookup(t testing.TB) env {
	t.Helper()
	envOnce.Do(func() { envVal, envErr = find() })
	if envErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node-minecraft-protocol is not usable and CI=true (.ci/run installs it): %v", envErr)
		}
		t.Skipf("node-minecraft-protocol is not usable, so this test is skipped: %v", envErr)
	}
	return envVal
}

// Require skips the test (fails it under CI=true) unless node and the
// scripts are installed. A test that starts goroutines around RunClients
// calls it first, so that a skip does not leave them running.
func Require(t testing.TB) {
	t.Helper()
	lookup(t)
}

// find looks for node on PATH and for the scripts' node_modules below the
// module root (found from the working directory, a package folder under go
// test).
func find() (env, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return env{}, fmt.Errorf("node is not on PATH (install Node.js 20 or later, then %s): %w", InstallCommand, err)
	}
	root, err := moduleRoot()
	if err != nil {
		return env{}, err
	}
	dir := filepath.Join(root, ScriptDir)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "minecraft-protocol", "package.json")); err != nil {
		return env{}, fmt.Errorf("minecraft-protocol is not installed in %s (run %s at %s): %w", dir, InstallCommand, root, err)
	}
	return env{node: node, dir: dir}, nil
}

// moduleRoot is the nearest folder up from the working directory that has
// a go.mod.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the module root: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or above it", wd)
		}
	}
}

// process is one node process running a script.
type process struct {
	name   string // the script, for messages
	cmd    *exec.Cmd
	stderr logbuf.Buffer
	exited chan struct{} // closed once standard output ended and node was reaped
	err    error         // cmd.Wait's, once exited is closed
}

// start runs node script args in the scripts' folder, calling onLine (from
// one goroutine) with each line of its standard output. The test's cleanup
// kills its process group and checks that the group is gone.
func start(t testing.TB, e env, script string, args []string, onLine func(string)) *process {
	t.Helper()
	p := &process{name: script, exited: make(chan struct{})}
	p.cmd = exec.Command(e.node, append([]string{script}, args...)...)
	p.cmd.Dir = e.dir
	p.cmd.SysProcAttr = procAttr()
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("node %s: %v", script, err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting node %s: %v", script, err)
	}
	began := time.Now()
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			onLine(sc.Text())
		}
		// Whatever is left (a line past 1 MiB) is drained, so node never
		// blocks on a full pipe; Wait must come after the last read.
		_, _ = io.Copy(io.Discard, out)
		p.err = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
		// What node costs a test, for keeping it small.
		st := p.cmd.ProcessState
		t.Logf("node %s ran %v, CPU %v", script, time.Since(began).Round(time.Millisecond), (st.UserTime() + st.SystemTime()).Round(time.Millisecond))
	})
	return p
}

// wait waits up to timeout for the script to exit on its own and returns
// its exit status; on timeout it kills the process group first.
func (p *process) wait(timeout time.Duration) (exitCode int, timedOut bool, err error) {
	select {
	case <-p.exited:
	case <-time.After(timeout):
		timedOut = true
		p.killGroup()
		<-p.exited
	}
	var exit *exec.ExitError
	if p.err == nil || errors.As(p.err, &exit) {
		return p.cmd.ProcessState.ExitCode(), timedOut, nil
	}
	return -1, timedOut, fmt.Errorf("node %s: %w", p.name, p.err)
}

// killGroup sends SIGKILL to the process group.
func (p *process) killGroup() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }

// stop kills the process group, waits for node to be reaped and reports
// any process of the group still there a few seconds later.
func (p *process) stop() error {
	p.killGroup()
	<-p.exited
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		// Signal 0 checks for the group's processes without signalling them.
		err := syscall.Kill(-p.cmd.Process.Pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: process group %d still has processes 5s after SIGKILL (kill: %v)", p.name, p.cmd.Process.Pid, err)
		case <-time.After(20 * time.Millisecond):
			p.killGroup()
		}
	}
}

// Stderr returns what the script wrote to standard error so far, at most
// its last 8 KiB.
func (p *process) Stderr() string {
	s := p.stderr.String()
	if len(s) > 8<<10 {
		s = "..." + s[len(s)-8<<10:]
	}
	return strings.TrimSpace(s)
}
