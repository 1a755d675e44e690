package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// Child mode of the test binary: run tidegate's main with the arguments in
// childArgsEnv under a descriptor limit of childNoFileEnv.
const (
	childArgsEnv   = "TIDEGATE_CMD_TEST_ARGS"
	childNoFileEnv = "TIDEGATE_CMD_TEST_NOFILE"
)

func runChild(argsJSON string) int {
	var args []string
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		fmt.Fprintln(os.Stderr, "child args:", err)
		return 2
	}
	var n uint64
	if _, err := fmt.Sscan(os.Getenv(childNoFileEnv), &n); err == nil && n > 0 {
		var rl syscall.Rlimit
		setLimit(&rl.Cur, n)
		setLimit(&rl.Max, n)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			fmt.Fprintln(os.Stderr, "child setrlimit:", err)
			return 2
		}
	}
	os.Args = append([]string{"tidegate"}, args...)
	main()
	return 0
}

// setLimit sets an rlimit field, uint64 on Linux and macOS, int64 on FreeBSD.
func setLimit[T ~int64 | ~uint64](field *T, n uint64) { *field = T(n) }

// freePort returns a loopback address whose port was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// echoBackend is a plain echo server for the raw proxy to relay to.
func echoBackend(t *testing.T) string {
	t.Helper()
	return testserver.Conns(t, func(c net.Conn) {
		buf := make([]byte, 4096) // not io.Copy: splice would add two pipe descriptors per connection
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if _, err := c.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
}

// child is a tidegate command running as a child process.
type child struct {
	cmd     *exec.Cmd
	done    chan error
	logPath string // its stdout and stderr
}

// startChild runs tidegate with args in a child process under a descriptor
// limit of nofile (0: the test's); it is killed when the test ends, and its
// log shown if the test failed.
func startChild(t *testing.T, nofile int, args ...string) *child {
	t.Helper()
	return startChildEnv(t, nofile, nil, args...)
}

// startChildEnv is startChild with env added to the child's environment.
func startChildEnv(t *testing.T, nofile int, env []string, args ...string) *child {
	t.Helper()
	b, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), env...), childArgsEnv+"="+string(b), fmt.Sprintf("%s=%d", childNoFileEnv, nofile))
	logPath := filepath.Join(t.TempDir(), "child.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := &child{cmd: cmd, done: make(chan error, 1), logPath: logPath}
	go func() { ch.done <- cmd.Wait(); logFile.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-ch.done
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			if len(out) > 8000 && os.Getenv("TIDEGATE_TEST_FULL_LOG") == "" {
				out = out[len(out)-8000:]
			}
			t.Logf("child log (tail):\n%s", out)
		}
	})
	return ch
}

// running reports whether the child has not exited.
func (c *child) running() bool {
	select {
	case err := <-c.done:
		c.done <- err
		return false
	default:
		return true
	}
}

// waitListening waits until addr accepts a connection.
func waitListening(t *testing.T, ch *child, addr string) {
	t.Helper()
	waitfor.Check(t, "the child to listen on "+addr, func() error {
		if !ch.running() {
			t.Fatalf("child exited before listening on %s: %v", addr, <-ch.done)
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// waitHealthy waits until the child's /healthz and /readyz on metrics both
// answer 200. A command binds its --metrics-listen after its service's
// listeners, so waitListening on those does not wait for it.
func waitHealthy(t *testing.T, ch *child, metrics string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	waitfor.Check(t, "/healthz and /readyz to answer 200 on "+metrics, func() error {
		if !ch.running() {
			t.Fatalf("child exited before its health endpoints answered: %v", <-ch.done)
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			resp, err := client.Get("http://" + metrics + path)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %d %s", path, resp.StatusCode, body)
			}
		}
		return nil
	})
}

// wantExit waits up to d for the child to exit after what (a signal, the
// end of its sessions) and fails the test unless it exited with status 0.
func (c *child) wantExit(t *testing.T, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err
		if err != nil {
			t.Fatalf("the child exited with %v after %s, want status 0", err, what)
		}
	case <-time.After(d):
		t.Fatalf("the child did not exit within %v of %s", d, what)
	}
}

// terminate sends SIGTERM and wants the child to exit with status 0 within d.
func (c *child) terminate(t *testing.T, d time.Duration) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	c.wantExit(t, d, "SIGTERM")
}

// overloadTarget is one command to storm: how to start it, and the request
// it must echo byte for byte.
type overloadTarget struct {
	name  string
	args  func(t *testing.T, listen, metrics string) []string
	frame func(rng *rand.Rand) []byte
}

// tlvFrame is a keep-alive TLV request: type 0x81, 4-byte length, body.
func tlvFrame(rng *rand.Rand) []byte {
	body := make([]byte, 16)
	for i := range body {
		body[i] = byte(rng.Uint32())
	}
	f := []byte{0x81, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(f[1:], uint32(len(body)))
	return append(f, body...)
}

func rawFrame(rng *rand.Rand) []byte {
	b := make([]byte, 24)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// echoFrame writes frame on c and reads it back within d.
func echoFrame(c net.Conn, frame []byte, d time.Duration) error {
	_ = c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(frame); err != nil {
		return err
	}
	got := make([]byte, len(frame))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if !bytes.Equal(got, frame) {
		return fmt.Errorf("echo differs: got %x, want %x", got, frame)
	}
	return nil
}

// TestOverloadStormKeepsHeldSessions is the descriptor storm: the server
// runs in a child process with 1,000 descriptors and no session limit of
// its own, holds sessions that keep echoing, and is stormed far past what
// its descriptors can hold. No held session may be lost; the storm's
// connections are served, left waiting in the backlog, or refused, never
// cut by an engine shutdown; /healthz and /readyz answer 200 throughout; a
// new session is served after the storm; SIGTERM ends the process with 0.
func TestOverloadStormKeepsHeldSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("storm test")
	}
	targets := []overloadTarget{
		{name: "proxy-raw", frame: rawFrame, args: func(t *testing.T, listen, metrics string) []string {
			cfg := filepath.Join(t.TempDir(), "proxy.yaml")
			yaml := fmt.Sprintf("listeners: [{listen: %q, mode: raw, group: main}]\ngroups: {main: {backends: [{addr: %q}]}}\n"+
				// The storm comes from 127.0.0.1: the per-address limits
				// would refuse it before the descriptor budget is reached.
				"limits: {max_sessions: 0, connection_rate: 0, subnet_connection_rate: 0, max_sessions_per_subnet: 0}\n", listen, echoBackend(t))
			if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"proxy", "--config", cfg, "--metrics-listen", metrics, "--log-level", "warn"}
		}},
		{name: "serve", frame: tlvFrame, args: func(t *testing.T, listen, metrics string) []string {
			return []string{"serve", "--listen", listen, "--loops", "2", "--metrics-listen", metrics, "--log-level", "warn"}
		}},
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) { stormTarget(t, tg) })
	}
}

func stormTarget(t *testing.T, tg overloadTarget) {
	const (
		nofile = 1000
		held   = 100
		storm  = 3000
	)
	listen, metrics := freePort(t), freePort(t)
	ch := startChild(t, nofile, tg.args(t, listen, metrics)...)
	waitListening(t, ch, listen)
	// The command binds its metrics listener only after its service's: the
	// endpoints must be up before they are polled "throughout" (once, the
	// first poll came before the listener and was refused).
	waitHealthy(t, ch, metrics)

	// Held sessions echo checked data until the end; they and the health
	// poller stop when stop closes, at the latest when the test ends (before
	// the child is killed).
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	var heldWG, pollWG sync.WaitGroup
	t.Cleanup(func() { halt(); heldWG.Wait(); pollWG.Wait() })
	var heldLost, heldEchoes atomic.Int64
	heldErr := make(chan error, held)
	ready := make(chan struct{}, held)
	for i := 0; i < held; i++ {
		heldWG.Add(1)
		go func(i int) {
			defer heldWG.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			c, err := net.DialTimeout("tcp", listen, 5*time.Second)
			if err == nil {
				defer c.Close()
				err = echoFrame(c, tg.frame(rng), 10*time.Second)
			}
			ready <- struct{}{}
			for err == nil {
				heldEchoes.Add(1)
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				err = echoFrame(c, tg.frame(rng), 10*time.Second)
			}
			heldLost.Add(1)
			heldErr <- fmt.Errorf("held session %d: %w", i, err)
		}(i)
	}
	for i := 0; i < held; i++ {
		<-ready
	}
	if n := heldLost.Load(); n > 0 {
		t.Fatalf("%d held sessions failed before the storm: %v", n, <-heldErr)
	}

	// Health is polled all through the storm.
	var healthFail atomic.Value
	var polls atomic.Int64
	pollWG.Add(1)
	go func() {
		defer pollWG.Done()
		client := &http.Client{Timeout: 5 * time.Second}
		for {
			for _, path := range []string{"/healthz", "/readyz"} {
				resp, err := client.Get("http://" + metrics + path)
				if err != nil {
					healthFail.CompareAndSwap(nil, fmt.Sprintf("%s: %v", path, err))
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					healthFail.CompareAndSwap(nil, fmt.Sprintf("%s: %d %s", path, resp.StatusCode, body))
				}
				polls.Add(1)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	// The storm: every connection sends one frame and waits for its echo.
	var served, queued, refused atomic.Int64
	var stormConns sync.Map
	var stormWG sync.WaitGroup
	for i := 0; i < storm; i++ {
		stormWG.Add(1)
		go func(i int) {
			defer stormWG.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			c, err := net.DialTimeout("tcp", listen, 3*time.Second)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					queued.Add(1) // the backlog was full: the SYN waits for a retry
				} else {
					refused.Add(1)
				}
				return
			}
			stormConns.Store(i, c)
			switch err := echoFrame(c, tg.frame(rng), 3*time.Second); {
			case err == nil:
				served.Add(1)
			case isTimeout(err):
				queued.Add(1) // still in the backlog: not accepted, not cut
			default:
				refused.Add(1)
			}
		}(i)
	}
	stormWG.Wait()
	stormConns.Range(func(_, c any) bool { c.(net.Conn).Close(); return true })
	t.Logf("storm of %d: %d served, %d left waiting, %d refused; held sessions made %d echoes",
		storm, served.Load(), queued.Load(), refused.Load(), heldEchoes.Load())

	if !ch.running() {
		t.Fatalf("the server exited during the storm: %v", <-ch.done)
	}
	// A new session is served once the storm's connections are gone.
	waitfor.Check(t, "a new session to be served after the storm", func() error {
		c, err := net.DialTimeout("tcp", listen, 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		return echoFrame(c, tg.frame(rand.New(rand.NewPCG(1, 1))), 2*time.Second)
	})
	halt()
	heldWG.Wait()
	pollWG.Wait()
	if n := heldLost.Load(); n > 0 {
		t.Errorf("%d of %d held sessions lost during the storm, first: %v", n, held, <-heldErr)
	}
	if f := healthFail.Load(); f != nil {
		t.Errorf("health endpoint failed during the storm (of %d polls): %v", polls.Load(), f)
	}
	if served.Load() == 0 || served.Load()+queued.Load()+refused.Load() != storm {
		t.Errorf("storm outcomes do not add up: %d served, %d waiting, %d refused of %d",
			served.Load(), queued.Load(), refused.Load(), storm)
	}
	if queued.Load()+refused.Load() == 0 {
		t.Errorf("the storm never went past the descriptor limit: all %d served", storm)
	}
	ch.terminate(t, 15*time.Second)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
