package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/notifysock"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// TestLiveUpgradeKeepsEverySession: 1,000 raw sessions stream random bytes
// both ways (an echo backend) while the proxy gets SIGUSR2, and five go-mc
// bots in play state sit on a minecraft listener of the same proxy. A new
// process takes over the listeners and every session; each echo arrives
// whole (sha256), no session sees an end or an error, every bot goes on
// getting its play packets echoed, the old process exits 0, and the new one
// serves new connections.
func TestLiveUpgradeKeepsEverySession(t *testing.T) {
	const sessions, pieces, piece = 1000, 48, 2 << 10
	listen, mcListen, metrics := freePort(t), freePort(t), freePort(t)
	cfg := filepath.Join(t.TempDir(), "proxy.yaml")
	yaml := fmt.Sprintf("listeners: [{listen: %q, mode: raw, group: main}, {listen: %q, mode: minecraft}]\n"+
		"default_group: mc\ngroups: {main: {backends: [{addr: %q}]}, mc: {backends: [{addr: %q}]}}\n"+
		"shutdown: {drain_timeout: 30s}\n"+
		// 1,000 sessions from 127.0.0.1 at once: past the default
		// connection rate and subnet cap.
		"limits: {connection_rate: 0, subnet_connection_rate: 0, max_sessions_per_subnet: 0}\n", listen, mcListen, echoBackend(t), minecraftBackend(t))
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ch := startChild(t, 0, "proxy", "--config", cfg, "--metrics-listen", metrics, "--log-level", "info")
	waitListening(t, ch, listen)
	oldPID := healthPID(t, metrics)
	var bots []*gomcbot.Bot
	for i := 0; i < 5; i++ {
		b := gomcbot.Join(t, mcListen, fmt.Sprintf("Bot%d", i), 120*time.Second)
		b.Echo(t, bytes.Repeat([]byte("before the upgrade "), 30))
		bots = append(bots, b)
	}

	// Connect one after the other: a thousand dials at once on a loaded
	// 2-core machine outlast any dial timeout in the accept queue, and
	// connecting is not what is tested.
	conns := make([]net.Conn, sessions)
	for i := range conns {
		c, err := net.DialTimeout("tcp", listen, 30*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns[i] = c
	}
	var wg sync.WaitGroup
	var failed atomic.Int32
	errs := make(chan error, 2*sessions) // a write and a read error each, at most
	started := make(chan struct{}, sessions)
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// ChaCha8 fills the 96 KiB at once: a byte-at-a-time loop over
			// all 1,000 sessions (96 M calls under -race) kept this process's
			// goroutines from running for longer than the dial timeout on a
			// loaded machine, and dials failed with i/o timeouts.
			data := make([]byte, pieces*piece)
			var seed [32]byte
			seed[0], seed[1], seed[2] = byte(i), byte(i>>8), 11
			_, _ = rand.NewChaCha8(seed).Read(data)
			c := conns[i]
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(90 * time.Second))
			go func() {
				signal := sync.OnceFunc(func() { started <- struct{}{} })
				defer signal() // a failed write must not leave the test waiting
				for k := 0; k < pieces; k++ {
					if _, err := c.Write(data[k*piece : (k+1)*piece]); err != nil {
						failed.Add(1)
						errs <- fmt.Errorf("session %d: write %d: %w", i, k, err)
						return
					}
					if k == 0 {
						signal()
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
			h := sha256.New()
			if n, err := io.CopyN(h, c, int64(len(data))); err != nil {
				failed.Add(1)
				errs <- fmt.Errorf("session %d: after %d of %d bytes: %w", i, n, len(data), err)
				return
			}
			if [32]byte(h.Sum(nil)) != sha256.Sum256(data) {
				failed.Add(1)
				errs <- fmt.Errorf("session %d: the echo differs from what was sent", i)
			}
		}(i)
	}
	for i := 0; i < sessions; i++ {
		select {
		case <-started:
		case <-time.After(60 * time.Second):
			t.Fatalf("only %d of %d sessions started streaming within a minute", i, sessions)
		}
	}
	if err := ch.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	newPID := newHealthPID(t, metrics, oldPID)
	t.Cleanup(func() { _ = syscall.Kill(newPID, syscall.SIGKILL) })
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 10 {
			t.Error(err)
		}
	}
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d of %d sessions failed across the upgrade", f, sessions)
	}
	waitOldProcessExit(t, ch)
	for _, b := range bots {
		b.Echo(t, bytes.Repeat([]byte("after the upgrade "), 30))
	}
	c, err := net.DialTimeout("tcp", listen, 5*time.Second)
	if err != nil {
		t.Fatalf("after the upgrade: %v", err)
	}
	defer c.Close()
	if err := echoFrame(c, []byte("after the upgrade"), 5*time.Second); err != nil {
		t.Fatalf("a new session after the upgrade: %v", err)
	}
}

// minecraftBackend starts tidegate's fake game server (compressed, as a
// modern server is) in this process and returns its address.
func minecraftBackend(t *testing.T) string {
	t.Helper()
	_, addr := testserver.MCBackend(t, mcbackend.Config{Compression: true, CompressionThreshold: 64})
	return addr
}

// healthPID returns the pid /healthz reports, waiting for it to answer.
func healthPID(t *testing.T, addr string) int {
	t.Helper()
	var pid int
	waitfor.For(t, fmt.Sprintf("a pid from http://%s/healthz", addr), func() bool {
		var ok bool
		pid, ok = tryHealthPID(addr)
		return ok
	})
	return pid
}

// newHealthPID waits for /healthz to answer from a process other than old
// (the metrics socket is shared during an upgrade: either may answer).
func newHealthPID(t *testing.T, addr string, old int) int {
	t.Helper()
	var pid int
	waitfor.Within(t, 30*time.Second, "a new process to answer /healthz after SIGUSR2", func() error {
		var ok bool
		if pid, ok = tryHealthPID(addr); !ok || pid == old {
			return fmt.Errorf("answered by pid %d (ok %v), the old one is %d", pid, ok, old)
		}
		return nil
	})
	return pid
}

func tryHealthPID(addr string) (int, bool) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n"); err != nil {
		return 0, false
	}
	body, _ := io.ReadAll(c)
	for i := 0; i+3 < len(body); i++ {
		if string(body[i:i+4]) == "\r\n\r\n" {
			body = body[i+4:]
			break
		}
	}
	var r struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal(body, &r) != nil || r.PID == 0 {
		return 0, false
	}
	return r.PID, true
}

// TestFailedUpgradeKeepsTheOldProcess: the new process cannot start (its
// configuration, read again from the same file, is broken now), so the
// upgrade fails: the old process goes on with the same pid, its open session
// keeps echoing, and it still accepts new sessions.
func TestFailedUpgradeKeepsTheOldProcess(t *testing.T) {
	listen, metrics := freePort(t), freePort(t)
	cfg := filepath.Join(t.TempDir(), "proxy.yaml")
	yaml := fmt.Sprintf("listeners: [{listen: %q, mode: raw, group: main}]\ngroups: {main: {backends: [{addr: %q}]}}\n", listen, echoBackend(t))
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ch := startChild(t, 0, "proxy", "--config", cfg, "--metrics-listen", metrics, "--log-level", "info")
	waitListening(t, ch, listen)
	pid := healthPID(t, metrics)
	open, err := net.DialTimeout("tcp", listen, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := echoFrame(open, []byte("before"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("listeners: [{listen: nowhere}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ch.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	// The failure is logged once the new process has exited; meanwhile and
	// after, the old one serves.
	ch.waitLog(t, "live upgrade failed")
	if !ch.running() {
		t.Fatalf("the old process exited: %v", <-ch.done)
	}
	if got := healthPID(t, metrics); got != pid {
		t.Fatalf("/healthz answers from pid %d, want the old process %d", got, pid)
	}
	if err := echoFrame(open, []byte("after"), 5*time.Second); err != nil {
		t.Fatalf("the open session after the failed upgrade: %v", err)
	}
	c, err := net.DialTimeout("tcp", listen, 5*time.Second)
	if err != nil {
		t.Fatalf("a new session after the failed upgrade: %v", err)
	}
	defer c.Close()
	if err := echoFrame(c, []byte("new"), 5*time.Second); err != nil {
		t.Fatalf("a new session after the failed upgrade: %v", err)
	}
}

// waitLog waits up to 30 s for text in the child's log (which startChild's
// cleanup shows when the test fails).
func (c *child) waitLog(t *testing.T, text string) {
	t.Helper()
	waitfor.Within(t, 30*time.Second, fmt.Sprintf("%q in the child's log", text), func() error {
		if log := readFile(t, c.logPath); !strings.Contains(log, text) {
			return fmt.Errorf("not in its %d bytes yet", len(log))
		}
		return nil
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUpgradeWhoseNewProcessDiesMidHandOver: the new process is killed while
// the old one is still handing over (a client that has not sent its
// handshake keeps the hand-over waiting for it to relay). The old process
// must notice, take up accepting on its listeners again, tell the service
// manager it is the main process again, and go on serving: new raw sessions
// echo through it, a go-mc bot joins through it.
func TestUpgradeWhoseNewProcessDiesMidHandOver(t *testing.T) {
	sock := notifysock.Listen(t, filepath.Join(t.TempDir(), "notify"))
	ch, listen, mcListen, metrics, oldPID := startUpgradable(t)
	waiting, newPID := upgradeWithAClientWaiting(t, ch, mcListen, metrics, oldPID)
	defer waiting.Close()
	if err := syscall.Kill(newPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ch.waitLog(t, "exited during the hand-over") // the old process noticed the new one's death
	// MAINPID went to the new process at "ready", and must come back.
	mainPIDs := mainPIDNotifications(t, sock)
	if want := []int{newPID, oldPID}; !slices.Equal(mainPIDs, want) {
		t.Fatalf("MAINPID notifications %v, want %v (to the new process, then back)", mainPIDs, want)
	}
	servesAgain(t, ch, oldPID, listen, mcListen, metrics)
	waiting.Close()
}

// mainPIDNotifications returns the MAINPID= values among the notifications
// waiting on sock, in order.
func mainPIDNotifications(t *testing.T, sock *net.UnixConn) []int {
	t.Helper()
	var pids []int
	buf := make([]byte, 4096)
	for {
		_ = sock.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := sock.Read(buf)
		if err != nil {
			return pids
		}
		for _, line := range strings.Split(string(buf[:n]), "\n") {
			if v, ok := strings.CutPrefix(line, "MAINPID="); ok {
				pid, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("notification %q: %v", buf[:n], err)
				}
				pids = append(pids, pid)
			}
		}
	}
}
