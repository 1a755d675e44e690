package lifecycle

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Process is what a command knows of its own process from its start: when
// it started, the binary it was started from, where the service manager
// listens, and the signals caught since. Create it with Start as early as
// possible.
type Process struct {
	started time.Time
	// exe is the path the process was started from, read at start: after
	// the binary is replaced there, starting that path runs the new one (on
	// Linux os.Executable would name the replaced file later).
	exe    string
	exeErr error
	notify *Notifier
	// stop receives SIGINT and SIGTERM, reload SIGHUP and upgrade SIGUSR2,
	// from Start on, so that one that arrives while a server is still
	// starting (its first listeners may already accept) is neither fatal
	// (Go's default, which drops the sessions it has) nor lost: it is
	// handled once Run runs; a stop signal then drains.
	stop, reload, upgrade chan os.Signal
	// routed: the channels get the process's real signals (false in tests,
	// which send on them themselves).
	routed bool
}

// Start records the process's start and begins catching SIGHUP, SIGUSR2,
// SIGINT and SIGTERM into the returned value, until Release (or the end of
// Run, for the stop signals). It reads $NOTIFY_SOCKET for the
// value's Notifier.
func Start() *Process {
	p := newProcess()
	p.exe, p.exeErr = os.Executable()
	p.notify = NotifierFromEnv()
	p.routed = true
	signal.Notify(p.reload, syscall.SIGHUP)
	signal.Notify(p.upgrade, syscall.SIGUSR2)
	signal.Notify(p.stop, syscall.SIGINT, syscall.SIGTERM)
	return p
}

// newProcess is a Process whose channels get no real signals and whose
// Notifier sends nothing.
func newProcess() *Process {
	return &Process{
		started: time.Now(),
		notify:  &Notifier{},
		// Room for two: the first stop signal starts the drain, a second
		// during it ends the drain.
		stop:    make(chan os.Signal, 2),
		reload:  make(chan os.Signal, 1),
		upgrade: make(chan os.Signal, 1),
	}
}

// Release stops catching the process's signals into p: their default
// actions apply again unless another value catches them.
func (p *Process) Release() {
	if p.routed {
		signal.Stop(p.reload)
		signal.Stop(p.upgrade)
		signal.Stop(p.stop)
	}
}

// Notifier returns the service manager's notifier of the process.
func (p *Process) Notifier() *Notifier { return p.notify }

// catchStop routes SIGINT and SIGTERM to p.stop (Start already does; this
// keeps a Process that Run runs twice catching them); the function it
// returns ends that, so that after Run their default actions apply again.
func (p *Process) catchStop() func() {
	if !p.routed {
		return func() {}
	}
	signal.Notify(p.stop, syscall.SIGINT, syscall.SIGTERM)
	return func() { signal.Stop(p.stop) }
}

// logStopped writes the process's one stop line ("stopped"): why it
// stopped, how long it ran, the exit status it is about to end with, and
// the error that status comes from, if any. Level info for a clean stop,
// error otherwise.
func (p *Process) logStopped(log zerolog.Logger, cause string, status int, err error) {
	ev := log.Info()
	if status != 0 || err != nil {
		ev = log.Error().Err(err)
	}
	ev.Str("cause", cause).Dur("uptime", time.Since(p.started).Round(time.Millisecond)).
		Int("exit_status", status).Msg("stopped")
}
