package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/reactor"
)

// ExitFailure is the exit status a command ends with when Run fails (an
// engine ended on its own, or stopping failed), and what the stop line
// says then: a supervisor should restart the process.
const ExitFailure = 1

// StopTimeout bounds how long stopping the servers may take.
const StopTimeout = 10 * time.Second

// drainProgress is how often a drain logs what is still open.
const drainProgress = 5 * time.Second

// noUpgrade is what a command without a live upgrade says to SIGUSR2.
const noUpgrade = "this command has no live upgrade; SIGUSR2 ignored"

// Drain is how a command drains on its first SIGINT or SIGTERM, and what
// it does on SIGHUP and SIGUSR2.
type Drain struct {
	// Timeout bounds the drain: open sessions may go on this long.
	Timeout time.Duration
	// Shutdown stops accepting, waits for what is open to end or its
	// context to end, closes the rest and stops the servers.
	Shutdown func(context.Context) error
	// Open counts what is still open, for the progress lines.
	Open func() int64
	// Reload, when set, re-reads the configuration on SIGHUP and applies it
	// (returning every problem if it cannot); without it SIGHUP is logged
	// and ignored rather than ending the process, Go's default.
	Reload func() error
	// Upgrade, when set, runs a live upgrade on SIGUSR2 and reports whether
	// a new process took over; then this one drains what is left and exits.
	Upgrade func() (bool, error)
}

// RunOptions is what Run watches and how it stops.
type RunOptions struct {
	Log zerolog.Logger
	// Health is the command's registry: Run marks it draining when a
	// shutdown begins and watches its servers' event loops. Nil: nothing to
	// watch.
	Health *Registry
	// Ready, when set, is the status of the READY=1 that Run tells the
	// service manager once the stop signals are caught (what listens).
	Ready string
	// Drain, when set, is how the command drains before it stops; without
	// it, it stops at once.
	Drain *Drain
	// Stop stops every server and listener; Run gives it StopTimeout.
	Stop func(context.Context) error
}

// EngineEndedError is Run's error when a server's event loops ended without
// a shutdown being asked for.
type EngineEndedError struct {
	// Server is the name the server was registered under.
	Server string
	// Err is why its loops ended.
	Err error
}

// Error names the server and why its loops ended.
func (e *EngineEndedError) Error() string {
	return fmt.Sprintf("%s server: event loops ended: %v", e.Server, e.Err)
}

// Unwrap returns why the loops ended.
func (e *EngineEndedError) Unwrap() error { return e.Err }

// errStoppedWithoutShutdown is why an engine ended that Stop ended, but
// not this process's shutdown.
var errStoppedWithoutShutdown = errors.New("the server was stopped without a shutdown")

// Run serves until SIGINT or SIGTERM (or ctx's end) and then marks the
// registry as draining and stops: with a Drain, after draining (not
// accepting, so readiness fails at once; open sessions going on until they
// end or the drain's timeout; progress logged; a second signal ending the
// drain at once); in any case stopping the servers within StopTimeout.
// SIGHUP reloads and SIGUSR2 upgrades as the Drain says. With a Ready
// status it tells a service manager READY=1 once the signals are caught, so
// that a stop asked for as soon as the unit is up drains too; it tells it
// STOPPING=1 when the shutdown begins.
//
// If the event loops of one of the registry's servers end first, it logs
// why at error level, stops the rest and returns an *EngineEndedError (with
// the error of stopping joined, if any), so that the command exits with
// ExitFailure and a supervisor restarts it. A failure to stop is returned
// too. It returns nil after a clean stop.
func (p *Process) Run(ctx context.Context, o RunOptions) error {
	release := p.catchStop()
	defer release()
	log := o.Log
	if o.Ready != "" {
		p.notify.Ready(log, o.Ready)
	}
	watch, cancel := context.WithCancel(ctx)
	defer cancel() // ends the engine watches
	var engines []namedEngine
	if o.Health != nil {
		engines = o.Health.engines
	}
	ended := make(chan namedEngine, len(engines))
	for _, e := range engines {
		go func() {
			select {
			case <-e.e.Done():
				ended <- e
			case <-watch.Done():
			}
		}()
	}
	cause := ""
	for cause == "" {
		select {
		case <-p.reload:
			p.reloadOnSignal(log, o.Drain, o.Ready)
		case <-p.upgrade:
			if upgradeOnSignal(log, o.Drain) {
				cause = "upgrade"
				p.signalsDuringUpgrade(log)
			}
		case sig := <-p.stop:
			cause = sig.String()
		case <-ctx.Done():
			cause = context.Cause(ctx).Error()
		case e := <-ended:
			return p.engineEnded(log, o, e)
		}
	}
	o.Health.SetDraining(true)
	log.Info().Str("cause", cause).Msg("shutting down")
	if d := o.Drain; d != nil {
		p.notify.Stopping(log, fmt.Sprintf("draining after %s: %d open, for at most %s", cause, d.Open(), d.Timeout))
		p.drain(log, d)
	} else {
		p.notify.Stopping(log, "stopping after "+cause)
	}
	if err := StopWithin(o.Stop); err != nil {
		err = fmt.Errorf("stopping: %w", err)
		p.logStopped(log, cause, ExitFailure, err)
		return err
	}
	p.logStopped(log, cause, 0, nil)
	return nil
}

// engineEnded stops the rest after e's loops ended on their own.
func (p *Process) engineEnded(log zerolog.Logger, o RunOptions, e namedEngine) error {
	o.Health.SetDraining(true)
	why := e.e.Err()
	if why == nil { // Stop was called, but not by this process's shutdown
		why = errStoppedWithoutShutdown
	}
	log.Error().Str("server", e.name).Err(why).Msg("event loops ended: stopping the other servers and exiting with status 1")
	p.notify.Stopping(log, fmt.Sprintf("%s server: event loops ended (%v): stopping, exit status 1", e.name, why))
	var err error = &EngineEndedError{Server: e.name, Err: why}
	if serr := StopWithin(o.Stop); serr != nil {
		err = errors.Join(err, fmt.Errorf("stopping: %w", serr))
	}
	p.logStopped(log, e.name+" server: event loops ended", ExitFailure, err)
	return err
}

// drain runs d's shutdown until it returns, its timeout passes or a second
// stop signal arrives, logging progress.
func (p *Process) drain(log zerolog.Logger, d *Drain) {
	log.Info().Int64("open", d.Open()).Str("drain_timeout", d.Timeout.String()).
		Msg("draining: not accepting; open sessions go on until they end or the drain timeout")
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d.Timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Shutdown(ctx) }()
	tick := time.NewTicker(drainProgress)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			ev := log.Info()
			if errors.Is(err, reactor.ErrDrainDeadline) {
				ev = log.Warn().Str("result", "deadline: the sessions still open were closed")
			} else if err != nil {
				ev = log.Error().Err(err)
			} else {
				ev = ev.Str("result", "every session ended")
			}
			ev.Str("took", time.Since(start).Round(time.Millisecond).String()).Msg("drained")
			return
		case <-p.stop:
			log.Warn().Int64("open", d.Open()).Msg("second signal: ending the drain now")
			cancel()
		case <-tick.C:
			open, elapsed := d.Open(), time.Since(start).Round(time.Second)
			log.Info().Int64("open", open).Str("elapsed", elapsed.String()).Msg("draining")
			p.notify.Status(log, fmt.Sprintf("draining: %d open after %s of at most %s", open, elapsed, d.Timeout))
		}
	}
}

// upgradeOnSignal handles a SIGUSR2 and reports whether a new process took
// over (this one then drains and exits).
func upgradeOnSignal(log zerolog.Logger, d *Drain) bool {
	if d == nil || d.Upgrade == nil {
		log.Warn().Msg(noUpgrade)
		return false
	}
	log.Info().Msg("SIGUSR2: live upgrade")
	ok, err := d.Upgrade()
	if err != nil {
		log.Error().Err(err).Msg("live upgrade failed: this process goes on serving")
	}
	return ok
}

// signalsDuringUpgrade handles the signals that came while a live upgrade
// that succeeded ran (the signal loop waits for it): a stop signal asked
// for the drain this process now begins, and must not count as the second
// one that ends it; a SIGHUP is for the new process, which read the
// configuration when it started.
func (p *Process) signalsDuringUpgrade(log zerolog.Logger) {
	select {
	case sig := <-p.stop:
		log.Info().Str("signal", sig.String()).Msg("stop signal during the live upgrade: draining what is left; a second one ends the drain")
	default:
	}
	select {
	case <-p.reload:
		log.Warn().Msg("SIGHUP during the live upgrade: not applied here; the new process serves with the configuration it read when it started (send it SIGHUP)")
	default:
	}
}

// reloadOnSignal handles a SIGHUP: it reloads with d's Reload, telling a
// service manager RELOADING=1 and then READY=1 again (ready is the status
// line), and logs the outcome; a failed reload leaves everything running.
func (p *Process) reloadOnSignal(log zerolog.Logger, d *Drain, ready string) {
	if d == nil || d.Reload == nil {
		log.Warn().Msg("SIGHUP: this command has no configuration to reload; ignored")
		return
	}
	p.notify.Reloading(log, "reloading the configuration after SIGHUP")
	if err := d.Reload(); err != nil {
		log.Error().Err(err).Msg("reload failed: the running configuration stays")
	}
	if ready != "" {
		p.notify.Ready(log, ready)
	}
}

// StopAll returns a stop function that runs every stop in order with the
// same deadline and joins their errors.
func StopAll(stops ...func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		errs := make([]error, 0, len(stops))
		for _, stop := range stops {
			errs = append(errs, stop(ctx))
		}
		return errors.Join(errs...)
	}
}

// StopWithin runs stop with a StopTimeout deadline.
func StopWithin(stop func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
	defer cancel()
	return stop(ctx)
}
