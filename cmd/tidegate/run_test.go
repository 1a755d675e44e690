package main

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/lifecycle"
	"github.com/tidegate/tidegate/reactor/fdbudget"
)

// TestEngineEndedExitsOne: a run that ended because an engine did exits
// with status 1 naming the server and why, with the error of stopping kept;
// another error keeps its own status.
func TestEngineEndedExitsOne(t *testing.T) {
	ended := &lifecycle.EngineEndedError{Server: "subscribe", Err: errors.New("gnet's engine stopped without being asked to")}
	err := runError(errors.Join(ended, errors.New("stopping: stuck")))
	if code := exitCode(err); code != exitRuntime {
		t.Fatalf("exit code %d (%v), want %d", code, err, exitRuntime)
	}
	if want := "tidegate: subscribe server: event loops ended: gnet's engine stopped without being asked to\nstopping: stuck"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if err := runError(nil); err != nil {
		t.Fatalf("clean run: %v", err)
	}
	if err := runError(errors.New("stopping: stuck")); exitCode(err) != exitRuntime || err.Error() != "stopping: stuck" {
		t.Fatalf("failed stop: exit code %d (%v)", exitCode(err), err)
	}
}

// TestFileLimitExitsTwo asks serve for as many connections as the
// descriptor limit: with the reserve and the descriptors already open they
// cannot fit, so start fails with exit code 2 and one line with the numbers.
func TestFileLimitExitsTwo(t *testing.T) {
	limit, err := fdbudget.RaiseFileLimit()
	if err != nil {
		t.Fatal(err)
	}
	if limit > math.MaxInt32 {
		t.Skipf("descriptor limit %d is unlimited in effect", limit)
	}
	logs := &syncBuffer{}
	max := strconv.FormatUint(limit, 10)
	err = testApp(logs).Run([]string{"tidegate", "serve", "--listen", "127.0.0.1:0", "--loops", "1", "--max-conns", max, "--log-format", "json"})
	if code := exitCode(err); code != exitConfig {
		t.Fatalf("exit code %d (%v), want %d", code, err, exitConfig)
	}
	var fl *fdbudget.LimitError
	msg := err.Error()
	if !errors.As(err, &fl) || strings.Contains(msg, "\n") || !strings.Contains(msg, max+" connections x 1 descriptors") ||
		!strings.Contains(msg, "the limit (RLIMIT_NOFILE) is "+max) {
		t.Fatalf("message %q: want one line naming %s connections and the limit", msg, max)
	}
}

// TestProxyMaxSessionsThatCannotFitExitsTwo: max_sessions counts two
// descriptors per session (client and backend), so half the descriptor
// limit plus one cannot fit.
func TestProxyMaxSessionsThatCannotFitExitsTwo(t *testing.T) {
	limit, err := fdbudget.RaiseFileLimit()
	if err != nil {
		t.Fatal(err)
	}
	if limit > math.MaxInt32 {
		t.Skipf("descriptor limit %d is unlimited in effect", limit)
	}
	sessions := strconv.FormatUint(limit/2+1, 10)
	cfg := filepath.Join(t.TempDir(), "proxy.yaml")
	yaml := "listeners: [{listen: 127.0.0.1:0}]\ndefault_group: main\ngroups: {main: {backends: [{addr: 127.0.0.1:1}]}}\n" +
		"limits: {max_sessions: " + sessions + "}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	err = testApp(&syncBuffer{}).Run([]string{"tidegate", "proxy", "--config", cfg, "--log-format", "json"})
	var fl *fdbudget.LimitError
	if code := exitCode(err); code != exitConfig || !errors.As(err, &fl) ||
		!strings.Contains(err.Error(), sessions+" connections x 2 descriptors") {
		t.Fatalf("exit code %d (%v), want %d and the numbers", code, err, exitConfig)
	}
}

func TestConfigErrorsExitTwo(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("listeners: [{listen: nowhere}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"proxy", "--config", bad},
		{"serve", "--no-such-flag"},
		{"serve", "--type-width", "3"},
		{"push", "--log-level", "loud"},
		{"backend", "--slow-sink", "sometimes"},
	} {
		err := testApp(&syncBuffer{}).Run(append([]string{"tidegate"}, args...))
		if code := exitCode(err); code != exitConfig {
			t.Errorf("%v: exit code %d (%v), want %d", args, code, err, exitConfig)
		}
	}
}

func TestStopAfterKeepsExitCode(t *testing.T) {
	cfgErr := configError(errors.New("bad"))
	if err := stopAfter(cfgErr, func(context.Context) error { return nil }); exitCode(err) != exitConfig {
		t.Fatalf("clean stop: exit code %d (%v)", exitCode(err), err)
	}
	err := stopAfter(cfgErr, func(context.Context) error { return errors.New("stuck") })
	if exitCode(err) != exitConfig || !strings.Contains(err.Error(), "bad") || !strings.Contains(err.Error(), "stopping: stuck") {
		t.Fatalf("failed stop: exit code %d (%v)", exitCode(err), err)
	}
	if err := stopAfter(errors.New("listen"), func(context.Context) error { return nil }); exitCode(err) != exitRuntime {
		t.Fatalf("runtime error: exit code %d (%v)", exitCode(err), err)
	}
}

// TestSIGTERMWhileStartingDrains stops the proxy as soon as its first
// listener (the demo backend, which starts before the proxy's own and its
// signal handling) accepts: the process must drain and exit with status 0,
// not die of the signal. It did die ("signal: terminated") when SIGINT and
// SIGTERM were caught only once the command served, a window a loaded
// machine made wide enough for TestJSONLogsOfARealSession to hit.
func TestSIGTERMWhileStartingDrains(t *testing.T) {
	listen, backend := freePort(t), freePort(t)
	cfgPath := filepath.Join(t.TempDir(), "proxy.yaml")
	cfgText := "listeners: [{listen: \"" + listen + "\"}]\ndefault_group: main\ngroups:\n  main: {backends: [{addr: \"" + backend + "\"}]}\nloops: 1\n"
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	ch := startChild(t, 0, "proxy", "--config", cfgPath, "--demo")
	waitListening(t, ch, backend)
	ch.terminate(t, 30*time.Second)
}
