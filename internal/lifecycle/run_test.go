package lifecycle

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/logbuf"
	"github.com/tidegate/tidegate/internal/testkit/notifysock"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// fakeEngine is an engine whose end the test decides.
type fakeEngine struct {
	done chan struct{}
	err  error
}

func (f *fakeEngine) Done() <-chan struct{} { return f.done }
func (f *fakeEngine) Err() error            { return f.err }

// logged returns the first line of b whose message is msg, nil if none.
func logged(b *logbuf.Buffer, msg string) map[string]any {
	for _, l := range b.JSONLines() {
		if l["message"] == msg {
			return l
		}
	}
	return nil
}

func TestEngineEndedExitsOne(t *testing.T) {
	logs := &logbuf.Buffer{}
	h := NewRegistry()
	running := &fakeEngine{done: make(chan struct{})}
	ended := &fakeEngine{done: make(chan struct{}), err: errors.New("gnet's engine stopped without being asked to")}
	h.watch("publish", running)
	h.watch("subscribe", ended)
	var stopped atomic.Int32
	stop := func(context.Context) error {
		stopped.Add(1)
		close(running.done)
		return nil
	}
	time.AfterFunc(20*time.Millisecond, func() { close(ended.done) })

	err := newProcess().Run(context.Background(), RunOptions{Log: zerolog.New(logs), Health: h, Stop: stop})
	var ee *EngineEndedError
	if !errors.As(err, &ee) || ee.Server != "subscribe" || !errors.Is(err, ended.err) {
		t.Fatalf("error %v: want an EngineEndedError of subscribe wrapping why", err)
	}
	if want := "subscribe server: event loops ended: gnet's engine stopped without being asked to"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
	if stopped.Load() != 1 || !h.Draining() {
		t.Fatalf("stopped %d times, draining %v; want the rest stopped once, draining", stopped.Load(), h.Draining())
	}
	var found bool
	for _, l := range logs.JSONLines() {
		if l["level"] == "error" && l["server"] == "subscribe" && strings.Contains(l["error"].(string), "without being asked") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no error-level log naming the server and why:\n%s", logs)
	}
	if l := logged(logs, "stopped"); l == nil || l["exit_status"] != float64(ExitFailure) {
		t.Fatalf("stop line %v: want exit status %d", l, ExitFailure)
	}
}

func TestEngineEndedReportsStopFailure(t *testing.T) {
	ended := &fakeEngine{done: make(chan struct{}), err: errors.New("boom")}
	close(ended.done)
	h := NewRegistry()
	h.watch("tlv", ended)
	err := newProcess().Run(context.Background(), RunOptions{Log: zerolog.Nop(), Health: h,
		Stop: func(context.Context) error { return errors.New("stuck") }})
	var ee *EngineEndedError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "stopping: stuck") {
		t.Fatalf("%v: want an EngineEndedError naming boom, and the stop's failure", err)
	}
}

// TestEngineStoppedWithoutShutdown: an engine whose loops end with no
// error (Stop called from elsewhere) still ends the run, saying so.
func TestEngineStoppedWithoutShutdown(t *testing.T) {
	ended := &fakeEngine{done: make(chan struct{})}
	close(ended.done)
	h := NewRegistry()
	h.watch("tlv", ended)
	err := newProcess().Run(context.Background(), RunOptions{Log: zerolog.Nop(), Health: h, Stop: func(context.Context) error { return nil }})
	if !errors.Is(err, errStoppedWithoutShutdown) {
		t.Fatalf("%v: want %v", err, errStoppedWithoutShutdown)
	}
}

func TestShutdownIsCleanAndDrains(t *testing.T) {
	running := &fakeEngine{done: make(chan struct{})}
	h := NewRegistry()
	h.watch("tlv", running)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var drainingAtStop bool
	err := newProcess().Run(ctx, RunOptions{Log: zerolog.Nop(), Health: h, Stop: func(context.Context) error {
		drainingAtStop = h.Draining()
		close(running.done) // what Stop does; no longer an unexpected end
		return nil
	}})
	if err != nil || !drainingAtStop {
		t.Fatalf("shutdown: %v, draining when stopping %v; want nil, true", err, drainingAtStop)
	}
	// Without a registry (the peers) it still stops.
	if err := newProcess().Run(ctx, RunOptions{Log: zerolog.Nop(), Stop: func(context.Context) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	// A failed stop is the run's error.
	if err := newProcess().Run(ctx, RunOptions{Log: zerolog.Nop(), Stop: func(context.Context) error { return errors.New("stuck") }}); err == nil ||
		err.Error() != "stopping: stuck" {
		t.Fatalf("failed stop: %v, want stopping: stuck", err)
	}
}

// TestEngineEndedNotifiesStopping: when a server's loops end on their own,
// the service manager hears STOPPING=1 naming the server before the
// process exits with status 1 (which Restart=on-failure restarts).
func TestEngineEndedNotifiesStopping(t *testing.T) {
	sock := notifysock.Listen(t, filepath.Join(t.TempDir(), "notify"))
	ended := &fakeEngine{done: make(chan struct{}), err: errors.New("boom")}
	close(ended.done)
	h := NewRegistry()
	h.watch("tlv", ended)
	p := newProcess()
	p.notify = NotifierFromEnv()
	err := p.Run(context.Background(), RunOptions{Log: zerolog.Nop(), Health: h, Ready: "TLV server on 127.0.0.1:1",
		Stop: func(context.Context) error { return nil }})
	if ee := (*EngineEndedError)(nil); !errors.As(err, &ee) {
		t.Fatalf("%v: want an EngineEndedError", err)
	}
	if got, want := notifysock.Read(t, sock, 5*time.Second), "READY=1\nSTATUS=TLV server on 127.0.0.1:1"; got != want {
		t.Fatalf("first notification %q, want %q", got, want)
	}
	if got := notifysock.Read(t, sock, 5*time.Second); !strings.HasPrefix(got, "STOPPING=1\nSTATUS=tlv server: event loops ended (boom)") {
		t.Fatalf("second notification %q: want STOPPING=1 naming the server and why", got)
	}
}

// runInBackground runs p with o and returns the channel of its result.
func runInBackground(p *Process, o RunOptions) <-chan error {
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background(), o) }()
	return done
}

// wait returns what done gets within 10 s.
func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s")
		return nil
	}
}

// TestSignalDrainsAndASecondEndsIt drives the drain with signals sent on
// the process's channel: the first marks the registry draining and starts
// the shutdown, which goes on until a second signal cancels its context;
// then the servers stop and the run ends cleanly.
func TestSignalDrainsAndASecondEndsIt(t *testing.T) {
	logs := &logbuf.Buffer{}
	sock := notifysock.Listen(t, filepath.Join(t.TempDir(), "notify"))
	p := newProcess()
	p.notify = NotifierFromEnv()
	h := NewRegistry()
	shutdownStarted := make(chan bool, 1)
	var stopped atomic.Bool
	drain := &Drain{
		Timeout: time.Minute,
		Open:    func() int64 { return 3 },
		Shutdown: func(ctx context.Context) error {
			shutdownStarted <- h.Draining()
			<-ctx.Done()
			return ctx.Err()
		},
	}
	done := runInBackground(p, RunOptions{Log: zerolog.New(logs), Health: h, Ready: "test on 127.0.0.1:1", Drain: drain,
		Stop: func(context.Context) error { stopped.Store(true); return nil }})
	if got := notifysock.Read(t, sock, 5*time.Second); got != "READY=1\nSTATUS=test on 127.0.0.1:1" {
		t.Fatalf("first notification %q", got)
	}
	p.stop <- syscall.SIGTERM
	select {
	case draining := <-shutdownStarted:
		if !draining {
			t.Fatal("the shutdown began before the registry was marked draining")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not start the shutdown")
	}
	if got, want := notifysock.Read(t, sock, 5*time.Second), "STOPPING=1\nSTATUS=draining after terminated: 3 open, for at most 1m0s"; got != want {
		t.Fatalf("notification after SIGTERM %q, want %q", got, want)
	}
	p.stop <- syscall.SIGINT
	if err := wait(t, done); err != nil {
		t.Fatalf("Run: %v, want a clean stop", err)
	}
	if !stopped.Load() {
		t.Fatal("the servers were not stopped after the drain")
	}
	if logged(logs, "second signal: ending the drain now") == nil {
		t.Fatalf("no line for the second signal:\n%s", logs)
	}
	if l := logged(logs, "drained"); l == nil || l["level"] != "error" {
		t.Fatalf("drained line %v: want the shutdown's error at error level", l)
	}
	if l := logged(logs, "stopped"); l == nil || l["cause"] != "terminated" || l["exit_status"] != float64(0) {
		t.Fatalf("stop line %v: want cause terminated, exit status 0", l)
	}
}

// TestReloadAndUpgradeSignals: SIGHUP runs the drain's reload (a failed one
// leaves the run going) and tells the manager RELOADING=1 then READY=1;
// SIGUSR2 runs its upgrade, and the run ends once a new process took over.
func TestReloadAndUpgradeSignals(t *testing.T) {
	sock := notifysock.Listen(t, filepath.Join(t.TempDir(), "notify"))
	p := newProcess()
	p.notify = NotifierFromEnv()
	reloads := make(chan error, 1)
	var upgrades atomic.Int32
	drain := &Drain{
		Timeout:  time.Second,
		Open:     func() int64 { return 0 },
		Shutdown: func(context.Context) error { return nil },
		Reload:   func() error { return <-reloads },
		Upgrade: func() (bool, error) {
			if upgrades.Add(1) == 1 {
				return false, errors.New("the new process exited")
			}
			return true, nil
		},
	}
	done := runInBackground(p, RunOptions{Log: zerolog.Nop(), Ready: "ready", Drain: drain, Stop: func(context.Context) error { return nil }})
	notifysock.Read(t, sock, 5*time.Second) // READY=1
	for _, result := range []error{errors.New("bad file"), nil} {
		reloads <- result
		p.reload <- syscall.SIGHUP
		if got := notifysock.Read(t, sock, 5*time.Second); !strings.HasPrefix(got, "RELOADING=1\n") {
			t.Fatalf("after SIGHUP %q, want RELOADING=1", got)
		}
		if got := notifysock.Read(t, sock, 5*time.Second); got != "READY=1\nSTATUS=ready" {
			t.Fatalf("after the reload (%v) %q, want READY=1 again", result, got)
		}
	}
	p.upgrade <- syscall.SIGUSR2 // fails: the run goes on
	p.upgrade <- syscall.SIGUSR2
	if err := wait(t, done); err != nil || upgrades.Load() != 2 {
		t.Fatalf("Run: %v after %d upgrades; want nil after 2", err, upgrades.Load())
	}
	if got := notifysock.Read(t, sock, 5*time.Second); !strings.HasPrefix(got, "STOPPING=1\nSTATUS=draining after upgrade") {
		t.Fatalf("after the upgrade %q, want STOPPING=1 after upgrade", got)
	}
}

// TestSignalsWithoutDrainAreIgnored: a command with nothing to reload or
// upgrade logs SIGHUP and SIGUSR2 and goes on; a stop signal then stops it
// at once.
func TestSignalsWithoutDrainAreIgnored(t *testing.T) {
	logs := &logbuf.Buffer{}
	p := newProcess()
	done := runInBackground(p, RunOptions{Log: zerolog.New(logs), Stop: func(context.Context) error { return nil }})
	p.reload <- syscall.SIGHUP
	p.upgrade <- syscall.SIGUSR2
	waitfor.For(t, "SIGHUP and SIGUSR2 both logged", func() bool {
		return logged(logs, noUpgrade) != nil && logged(logs, "SIGHUP: this command has no configuration to reload; ignored") != nil
	})
	p.stop <- syscall.SIGTERM
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}

func TestStopAllJoinsEveryError(t *testing.T) {
	var order []int
	step := func(i int, err error) func(context.Context) error {
		return func(context.Context) error { order = append(order, i); return err }
	}
	a, b := errors.New("a"), errors.New("b")
	err := StopAll(step(1, a), step(2, nil), step(3, b))(context.Background())
	if !errors.Is(err, a) || !errors.Is(err, b) || len(order) != 3 || order[0] != 1 || order[2] != 3 {
		t.Fatalf("StopAll: %v, order %v; want both errors, every stop in order", err, order)
	}
}

// TestStopSignalDuringAnUpgrade: a SIGTERM (and a SIGHUP) that arrives
// while a live upgrade runs waits for it; once a new process took over,
// that SIGTERM is the drain's first signal, not a second one that ends it
// at once, and the SIGHUP is logged as not applied.
func TestStopSignalDuringAnUpgrade(t *testing.T) {
	logs := &logbuf.Buffer{}
	p := newProcess()
	upgrading := make(chan struct{})
	signalled := make(chan struct{})
	shutdownStarted := make(chan struct{})
	finish := make(chan struct{})
	var reloads atomic.Int32
	drain := &Drain{
		Timeout: time.Minute,
		Open:    func() int64 { return 1 },
		Shutdown: func(ctx context.Context) error {
			close(shutdownStarted)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-finish:
				return nil
			}
		},
		Reload: func() error { reloads.Add(1); return nil },
		Upgrade: func() (bool, error) {
			close(upgrading)
			<-signalled
			return true, nil
		},
	}
	done := runInBackground(p, RunOptions{Log: zerolog.New(logs), Drain: drain, Stop: func(context.Context) error { return nil }})
	p.upgrade <- syscall.SIGUSR2
	<-upgrading
	p.stop <- syscall.SIGTERM
	p.reload <- syscall.SIGHUP
	close(signalled)
	<-shutdownStarted
	close(finish)
	if err := wait(t, done); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if logged(logs, "second signal: ending the drain now") != nil {
		t.Fatalf("the SIGTERM sent during the upgrade ended the drain at once:\n%s", logs)
	}
	if l := logged(logs, "drained"); l == nil || l["result"] != "every session ended" {
		t.Fatalf("drained line %v: want every session ended", l)
	}
	if logged(logs, "stop signal during the live upgrade: draining what is left; a second one ends the drain") == nil ||
		logged(logs, "SIGHUP during the live upgrade: not applied here; the new process serves with the configuration it read when it started (send it SIGHUP)") == nil {
		t.Fatalf("no line for the signals that came during the upgrade:\n%s", logs)
	}
	if reloads.Load() != 0 {
		t.Fatalf("%d reloads after a successful upgrade, want none", reloads.Load())
	}
}
