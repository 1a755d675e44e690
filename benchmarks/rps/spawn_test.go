package rps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/benchmarks/goserver"
)

// childServeEnv makes the test binary serve TLV as a child: its value is the
// address, or "fail" to exit 4 at once.
const childServeEnv = "RPS_TEST_CHILD_SERVE"

// TestMain runs the test binary as a spawned goroutine server when
// childServeEnv is set.
func TestMain(m *testing.M) {
	if addr := os.Getenv(childServeEnv); addr != "" {
		os.Exit(serveChild(addr))
	}
	os.Exit(m.Run())
}

func serveChild(addr string) int {
	if addr == "fail" {
		fmt.Fprintln(os.Stderr, "child: refusing to serve")
		return 4
	}
	srv, err := goserver.New(goserver.Config{Addr: addr})
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	<-sigs
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		return 1
	}
	return 0
}

// testChildCommand runs the test binary as the server; failing makes it
// exit at once instead.
func testChildCommand(t *testing.T, failing bool) ChildCommandFunc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return func(_ ServerKind, addr string, _ int) []string {
		if failing {
			addr = "fail"
		}
		return []string{"env", childServeEnv + "=" + addr, exe}
	}
}

func TestSpawnChildServesAndStops(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the child is measured through Linux's /proc")
	}
	ctx := context.Background()
	sp, err := Spawn(ctx, SpawnConfig{Kind: Goroutine, Strategy: Single, Mode: Child, ChildCommand: testChildCommand(t, false)})
	if err != nil {
		t.Fatal(err)
	}
	if sp.PID == 0 || sp.Procs != 1 {
		t.Errorf("spawned pid %d with %d procs, want a pid and 1", sp.PID, sp.Procs)
	}
	if rss, err := sp.RSS(); err != nil || rss <= 0 {
		t.Errorf("RSS = %d, %v", rss, err)
	}
	cfg := baseConfig(t, sp.Addr)
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, res, cfg)
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := sp.Stop(sctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := syscall.Kill(sp.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d is still there after Stop (kill 0: %v)", sp.PID, err)
	}
}

func TestSpawnChildThatExitsEarlyFails(t *testing.T) {
	_, err := Spawn(context.Background(), SpawnConfig{Kind: Goroutine, Strategy: Single, Mode: Child,
		ChildCommand: testChildCommand(t, true), StartTimeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "exited before accepting connections") ||
		!strings.Contains(err.Error(), "exit status 4") {
		t.Errorf("Spawn of a child that exits at once: %v, want it reported with its exit status", err)
	}
}
