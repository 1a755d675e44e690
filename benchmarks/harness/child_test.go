package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childModeEnv makes the test binary act as a child: its value is the mode.
const childModeEnv = "HARNESS_TEST_CHILD"

// TestMain runs the test binary as a child when childModeEnv is set.
func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		os.Exit(runChild(mode, os.Getenv("HARNESS_TEST_LISTEN")))
	}
	os.Exit(m.Run())
}

// runChild is a child's main: "serve" listens and exits 0 on SIGTERM,
// "stubborn" listens and ignores SIGTERM, "early" exits 3 at once, "mute"
// never listens.
func runChild(mode, listen string) int {
	fmt.Println("child up in mode", mode)
	switch mode {
	case "orphaning":
		// Start a serving child and die without stopping it.
		s := ChildSpec{Name: "orphan", Argv: []string{os.Args[0]}, Listen: listen,
			Env: []string{childModeEnv + "=serve", "HARNESS_TEST_LISTEN=" + listen}}
		c, err := Start(context.Background(), s)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("orphan pid", c.PID())
		return 0
	case "early":
		fmt.Println("cannot start: no configuration")
		return 3
	case "mute":
		time.Sleep(time.Minute)
		return 0
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	for range sigs {
		if mode == "serve" {
			fmt.Println("stopping on SIGTERM")
			return 0
		}
	}
	return 0
}

func linuxOnly(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the child's process tree is read from Linux's /proc")
	}
}

func childSpec(t *testing.T, mode string) ChildSpec {
	t.Helper()
	addr, err := FreeAddr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ChildSpec{Name: "child-" + mode, Argv: []string{exe}, Listen: addr,
		Env: []string{childModeEnv + "=" + mode, "HARNESS_TEST_LISTEN=" + addr}}
}

// assertGone fails unless pid no longer exists (it was reaped).
func assertGone(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d is still there after Stop (kill 0: %v)", pid, err)
	}
}

func TestStartWaitsForTheListenerAndStopEndsIt(t *testing.T) {
	linuxOnly(t)
	c, err := Start(context.Background(), childSpec(t, "serve"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", c.Addr())
	if err != nil {
		t.Fatalf("the child is ready but does not accept: %v", err)
	}
	conn.Close()
	pid := c.PID()
	if got := c.PIDs(); len(got) != 1 || got[0] != pid {
		t.Errorf("PIDs = %v, want [%d]", got, pid)
	}
	if !c.Running() {
		t.Fatal("Running is false for a serving child")
	}
	dir := c.Dir()
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if c.Running() || c.ExitError() != nil {
		t.Errorf("after Stop: running %v, exit %v; want an exit with status 0", c.Running(), c.ExitError())
	}
	assertGone(t, pid)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary directory %s is still there after Stop: %v", dir, err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

func TestAChildThatExitsEarlyFailsStartWithItsLog(t *testing.T) {
	linuxOnly(t)
	s := childSpec(t, "early")
	s.Dir = t.TempDir()
	c, err := Start(context.Background(), s)
	if err == nil {
		c.Stop()
		t.Fatal("Start succeeded for a child that exits at once")
	}
	for _, want := range []string{"exited before accepting connections on " + s.Listen, "exit status 3", "cannot start: no configuration"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start's error %q does not say %q", err, want)
		}
	}
}

func TestAChildThatIgnoresSIGTERMIsKilledAtTheDeadline(t *testing.T) {
	linuxOnly(t)
	s := childSpec(t, "stubborn")
	s.StopTimeout = 300 * time.Millisecond
	c, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	pid := c.PID()
	begin := time.Now()
	err = c.Stop()
	if err == nil || !strings.Contains(err.Error(), "did not stop on SIGTERM and was killed") {
		t.Errorf("Stop of a child that ignores SIGTERM: %v, want it reported as killed", err)
	}
	if took := time.Since(begin); took < s.StopTimeout {
		t.Errorf("Stop killed it after %v, before the %v deadline", took, s.StopTimeout)
	}
	if err := c.ExitError(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("ExitError = %v, want signal: killed", err)
	}
	assertGone(t, pid)
}

func TestAChildThatNeverListensFailsStartAndIsStopped(t *testing.T) {
	linuxOnly(t)
	s := childSpec(t, "mute")
	// Long enough for the child to have written its first line on a loaded
	// machine: the error must show it.
	s.ReadyTimeout = 2 * time.Second
	s.StopTimeout = 300 * time.Millisecond
	s.Dir = t.TempDir()
	c, err := Start(context.Background(), s)
	if err == nil {
		c.Stop()
		t.Fatal("Start succeeded for a child that never listens")
	}
	if !strings.Contains(err.Error(), "not accepting connections on "+s.Listen+" after 2s") ||
		!strings.Contains(err.Error(), "child up in mode mute") {
		t.Errorf("Start's error %q does not say what it waited for and show the log", err)
	}
	if pid := findChild(t, "mute"); pid != 0 {
		t.Errorf("pid %d of the mute child is still running after Start failed", pid)
	}
}

func TestAChildDiesWithThisProgram(t *testing.T) {
	linuxOnly(t)
	s := childSpec(t, "orphaning")
	s.Listen = "" // the parent exits at once; its child listens
	s.Dir = t.TempDir()
	c, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	<-c.Exited()
	if err := c.ExitError(); err != nil {
		t.Fatalf("the parent: %v\n%s", err, c.LogTail())
	}
	var orphan int
	for _, line := range strings.Split(c.LogTail(), "\n") {
		fmt.Sscanf(line, "orphan pid %d", &orphan)
	}
	if orphan == 0 {
		t.Fatalf("the parent did not start its child:\n%s", c.LogTail())
	}
	// The orphan is not this process's child: it is gone once kill fails,
	// or a zombie until init reaps it.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(orphan, 0) == nil && !zombie(orphan) {
		if time.Now().After(deadline) {
			syscall.Kill(orphan, syscall.SIGKILL)
			t.Fatalf("pid %d still runs 5s after its parent died", orphan)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && strings.HasPrefix(string(b[i+1:]), " Z")
}

func TestReadyIsPolledAfterTheListener(t *testing.T) {
	linuxOnly(t)
	s := childSpec(t, "serve")
	calls := 0
	s.Ready = func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}
	c, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if calls != 3 {
		t.Errorf("Ready was called %d times, want 3 (until it returned nil)", calls)
	}
}

func TestRetryFreePortTriesAgainWhileStartFails(t *testing.T) {
	var seen []string
	_, err := RetryFreePort("127.0.0.1", func(addr string) (int, error) {
		seen = append(seen, addr)
		return 0, fmt.Errorf("port %s taken", addr)
	})
	if len(seen) != FreePortAttempts || err == nil || !strings.Contains(err.Error(), seen[len(seen)-1]) {
		t.Errorf("RetryFreePort: %d attempts (%v), error %v; want %d and the last error", len(seen), seen, err, FreePortAttempts)
	}
	n, err := RetryFreePort("127.0.0.1", func(string) (int, error) { return 7, nil })
	if n != 7 || err != nil {
		t.Errorf("RetryFreePort of a start that works = %d, %v", n, err)
	}
}

// findChild returns the pid of a child of this process running in mode,
// or 0.
func findChild(t *testing.T, mode string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if strings.Contains(string(b), childModeEnv+"="+mode+"\x00") {
			var pid int
			fmt.Sscan(e.Name(), &pid)
			return pid
		}
	}
	return 0
}
