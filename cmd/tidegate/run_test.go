package main

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/reactor"
)

// fakeEngine is an engine whose end the test decides.
type fakeEngine struct {
	done chan struct{}
	err  error
}

func (f *fakeEngine) Done() <-chan struct{} { return f.done }
func (f *fakeEngine) Err() error            { return f.err }

func TestEngineEndedExitsOne(t *testing.T) {
	logs := &syncBuffer{}
	log := zerolog.New(logs)
	h := newHealthRegistry()
	running := &fakeEngine{done: make(chan struct{})}
	ended := &fakeEngine{done: make(chan struct{}), err: errors.New("gnet's engine stopped without being asked to")}
	h.engines = []namedEngine{{"publish", running}, {"subscribe", ended}}
	var stopped atomic.Int32
	stop := func(context.Context) error {
		stopped.Add(1)
		close(running.done)
		return nil
	}
	time.AfterFunc(20*time.Millisecond, func() { close(ended.done) })

	err := runUntilSignal(context.Background(), log, h, stop)
	if code := exitCode(err); code != exitRuntime {
		t.Fatalf("exit code %d (%v), want %d", code, err, exitRuntime)
	}
	if want := "subscribe server: event loops ended: gnet's engine stopped without being asked to"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
	if stopped.Load() != 1 || !h.Draining() {
		t.Fatalf("stopped %d times, draining %v; want the rest stopped once, draining", stopped.Load(), h.Draining())
	}
	var logged bool
	for _, l := range logs.logLines(t) {
		if l["level"] == "error" && l["server"] == "subscribe" && strings.Contains(l["error"].(string), "without being asked") {
			logged = true
		}
	}
	if !logged {
		t.Fatalf("no error-level log naming the server and why:\n%s", logs)
	}
}

func TestEngineEndedReportsStopFailure(t *testing.T) {
	ended := &fakeEngine{done: make(chan struct{}), err: errors.New("boom")}
	close(ended.done)
	h := newHealthRegistry()
	h.engines = []namedEngine{{"tlv", ended}}
	err := runUntilSignal(context.Background(), zerolog.Nop(), h, func(context.Context) error { return errors.New("stuck") })
	if code := exitCode(err); code != exitRuntime || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "stopping: stuck") {
		t.Fatalf("exit code %d, %v", code, err)
	}
}

func TestShutdownIsCleanAndDrains(t *testing.T) {
	running := &fakeEngine{done: make(chan struct{})}
	h := newHealthRegistry()
	h.engines = []namedEngine{{"tlv", running}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var drainingAtStop bool
	err := runUntilSignal(ctx, zerolog.Nop(), h, func(context.Context) error {
		drainingAtStop = h.Draining()
		close(running.done) // what Stop does; no longer an unexpected end
		return nil
	})
	if err != nil || !drainingAtStop {
		t.Fatalf("shutdown: %v, draining when stopping %v; want nil, true", err, drainingAtStop)
	}
	// Without a registry (the peers) it still stops.
	if err := runUntilSignal(ctx, zerolog.Nop(), nil, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestFileLimitExitsTwo asks serve for as many connections as the
// descriptor limit: with the reserve and the descriptors already open they
// cannot fit, so start fails with exit code 2 and one line with the numbers.
func TestFileLimitExitsTwo(t *testing.T) {
	limit, err := reactor.RaiseFileLimit()
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
	var fl *reactor.FileLimitError
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
	limit, err := reactor.RaiseFileLimit()
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
	var fl *reactor.FileLimitError
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
