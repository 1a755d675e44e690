// Package testredis starts a real redis-server for a test, on a free
// loopback port, without persistence, and kills it when the test ends.
package testredis

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a redis-server process a test started.
type Server struct {
	t    testing.TB
	bin  string
	port int
	// args come after the common ones; with conf, the first argument is a
	// configuration file written from conf (Sentinel needs one it can
	// rewrite) and args follow it.
	args []string
	conf func(port int) string
	dir  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan error // gets the process's end
}

// Start starts redis-server on a free port of 127.0.0.1. The test is
// skipped when the program is not installed, unless CI is set (.ci/run
// installs it), where that fails it.
func Start(t testing.TB) *Server {
	t.Helper()
	return launch(t, nil, nil)
}

// program returns the path of name (redis-server, redis-cli), skipping the
// test when it is not installed, or failing it under CI.
func program(t testing.TB, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (.ci/run installs the redis-server package): %v", name, err)
		}
		t.Skipf("%s is not installed (apt-get install redis-server): %v", name, err)
	}
	return bin
}

// launch starts a redis-server with args (and, with conf, a configuration
// file) on a free port, killed when the test ends.
func launch(t testing.TB, conf func(port int) string, args []string) *Server {
	t.Helper()
	s := &Server{t: t, bin: program(t, "redis-server"), args: args, conf: conf, dir: t.TempDir()}
	var err, lastErr error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			t.Fatal(err)
		}
		if lastErr = s.start(); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("starting redis-server: %v", lastErr)
	}
	t.Cleanup(s.Kill)
	return s
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start runs redis-server on s.port and waits until it answers PING.
func (s *Server) start() error {
	var argv []string
	if s.conf != nil {
		path := filepath.Join(s.dir, "redis-"+strconv.Itoa(s.port)+".conf")
		if err := os.WriteFile(path, []byte(s.conf(s.port)), 0o600); err != nil {
			return err
		}
		argv = append(argv, path)
	}
	argv = append(argv, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--protected-mode", "no", "--loglevel", "warning", "--repl-diskless-sync-delay", "0")
	cmd := exec.Command(s.bin, append(argv, s.args...)...)
	cmd.Dir = s.dir
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("redis-server on port %d exited: %v: %s", s.port, err, out.String())
		default:
		}
		if ping(s.Addr()) == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redis-server on port %d did not answer PING within 20s: %s", s.port, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	return nil
}

// ping sends PING and reads +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// Port is the server's port.
func (s *Server) Port() int { return s.port }

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the server's redis:// URL, database 0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Kill ends the server at once (SIGKILL); its data is lost.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Restart starts the server again on the same port, empty.
func (s *Server) Restart() {
	s.t.Helper()
	var err error
	for range 50 {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // the port may still be held a moment
	}
	s.t.Fatalf("restarting redis-server on port %d: %v", s.port, err)
}
