package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/reactor"
)

// Exit codes of the long-running commands; 0 is a clean stop.
const (
	// exitRuntime: an engine ended without a shutdown being asked for, or
	// something else failed while running. A supervisor should restart.
	exitRuntime = 1
	// exitConfig: the configuration or a flag is invalid, or a connection
	// limit cannot fit in the descriptor limit. Restarting will not help.
	exitConfig = 2
)

// stopTimeout bounds how long stopping the servers may take.
const stopTimeout = 10 * time.Second

// configError makes err end the process with exitConfig.
func configError(err error) error {
	return cli.Exit(fmt.Errorf("tidegate: %w", err), exitConfig)
}

// usageError is the OnUsageError of the long-running commands: a flag that
// does not parse is a configuration error.
func usageError(_ *cli.Context, err error, _ bool) error {
	return configError(fmt.Errorf("%w (see --help)", err))
}

// startError classifies an error from starting a server: a connection limit
// that cannot fit in the descriptor limit is a configuration error (its
// message names the numbers); any other error is returned as it is.
func startError(err error) error {
	if fl := (*reactor.FileLimitError)(nil); errors.As(err, &fl) {
		return configError(err)
	}
	return err
}

// metricsFlag is --metrics-listen, which startMetrics reads.
func metricsFlag() cli.Flag {
	return &cli.StringFlag{Name: "metrics-listen", Usage: "serve Prometheus /metrics, /healthz, /readyz and /debug/pprof/ (and for the proxy its admin API and status page) on this `ADDR` (off when empty; keep it private)"}
}

// startMetrics serves metrics and h's health endpoints on --metrics-listen,
// when it is set, and admin (nil for none) at /api/ and / beside them. It
// returns the bound address ("" when off) and the function that stops
// serving them (a no-op when off).
func startMetrics(c *cli.Context, log zerolog.Logger, h *healthRegistry, admin http.Handler, cs ...prometheus.Collector) (string, func(context.Context) error, error) {
	addr := c.String("metrics-listen")
	if addr == "" {
		return "", func(context.Context) error { return nil }, nil
	}
	bound, stop, err := serveMetrics(addr, h, admin, cs...)
	if err != nil {
		return "", nil, err
	}
	paths := "/metrics /healthz /readyz /debug/pprof/"
	if admin != nil {
		paths += " /api/v1/ /"
	}
	log.Info().Str("listen", bound.String()).Msg("metrics listening: " + paths)
	return bound.String(), stop, nil
}

// stopAll returns a stop function that runs every stop in order with the
// same deadline and joins their errors.
func stopAll(stops ...func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		errs := make([]error, 0, len(stops))
		for _, stop := range stops {
			errs = append(errs, stop(ctx))
		}
		return errors.Join(errs...)
	}
}

// runUntilSignal waits for SIGINT or SIGTERM (or ctx) and then marks h as
// draining and stops the servers within stopTimeout. If the event loops of
// one of h's servers end first, it logs why at error level, stops the rest
// and returns an error that exits with exitRuntime, so that a supervisor
// restarts the process. h may be nil (nothing to watch).
func runUntilSignal(ctx context.Context, log zerolog.Logger, h *healthRegistry, stop func(context.Context) error) error {
	return runUntilSignalDrain(ctx, log, h, "", nil, stop)
}

// drainPlan is how a command drains on its first SIGINT or SIGTERM.
type drainPlan struct {
	// timeout bounds the drain: open sessions may go on this long.
	timeout time.Duration
	// shutdown stops accepting, waits for what is open to end or its
	// context to end, closes the rest and stops the servers.
	shutdown func(context.Context) error
	// open counts what is still open, for the progress lines.
	open func() int64
	// reload, when set, re-reads the configuration on SIGHUP and applies it
	// (returning every problem if it cannot); without it SIGHUP is logged
	// and ignored rather than ending the process, Go's default.
	reload func() error
	// upgrade, when set, runs a live upgrade on SIGUSR2 and reports whether
	// a new process took over; then this one drains what is left and exits.
	upgrade func() (bool, error)
}

// drainProgress is how often a drain logs what is still open.
const drainProgress = 5 * time.Second

// runUntilSignalDrain is runUntilSignal that, with a plan, drains before
// stopping: not accepting (readiness fails at once), open sessions going on
// until they end or the plan's timeout, progress logged, a second signal
// ending the drain at once. With a ready status (what listens), it tells a
// service manager waiting on $NOTIFY_SOCKET READY=1 once the signals are
// caught, so that a stop asked for as soon as the unit is up drains too; in
// any case it tells it STOPPING=1 when the shutdown begins.
func runUntilSignalDrain(ctx context.Context, log zerolog.Logger, h *healthRegistry, ready string, plan *drainPlan, stop func(context.Context) error) error {
	// One channel for both signals: the first starts the shutdown, a second
	// during a drain ends the drain.
	catchStopSignals()
	defer signal.Stop(stopSignals)
	sigs := stopSignals
	catchReloadSignals()
	hups := reloadSignals
	usr2 := upgradeSignals
	if ready != "" {
		notifyReady(log, ready)
	}
	watch, cancel := context.WithCancel(ctx)
	defer cancel() // ends the engine watches
	var engines []namedEngine
	if h != nil {
		engines = h.engines
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
		case <-hups:
			reloadOnSignal(log, plan, ready)
		case <-usr2:
			if upgradeOnSignal(log, plan) {
				cause = "upgrade"
			}
		case sig := <-sigs:
			cause = sig.String()
		case <-ctx.Done():
			cause = context.Cause(ctx).Error()
		case e := <-ended:
			h.SetDraining(true)
			why := e.e.Err()
			if why == nil { // Stop was called, but not by this process's shutdown
				why = errors.New("the server was stopped without a shutdown")
			}
			log.Error().Str("server", e.name).Err(why).Msg("event loops ended: stopping the other servers and exiting with status 1")
			notifyStopping(log, fmt.Sprintf("%s server: event loops ended (%v): stopping, exit status 1", e.name, why))
			err := fmt.Errorf("%s server: event loops ended: %w", e.name, why)
			if serr := stopWithin(stop); serr != nil {
				err = errors.Join(err, fmt.Errorf("stopping: %w", serr))
			}
			logStopped(log, e.name+" server: event loops ended", exitRuntime, err)
			return cli.Exit(fmt.Errorf("tidegate: %w", err), exitRuntime)
		}
	}
	h.SetDraining(true)
	log.Info().Str("cause", cause).Msg("shutting down")
	if plan != nil {
		notifyStopping(log, fmt.Sprintf("draining after %s: %d open, for at most %s", cause, plan.open(), plan.timeout))
		drainWith(log, plan, sigs)
	} else {
		notifyStopping(log, "stopping after "+cause)
	}
	if err := stopWithin(stop); err != nil {
		err = fmt.Errorf("stopping: %w", err)
		logStopped(log, cause, exitRuntime, err)
		return err
	}
	logStopped(log, cause, 0, nil)
	return nil
}

// drainWith runs plan's shutdown until it returns, its timeout passes or a
// second signal arrives, logging progress.
func drainWith(log zerolog.Logger, plan *drainPlan, second <-chan os.Signal) {
	log.Info().Int64("open", plan.open()).Str("drain_timeout", plan.timeout.String()).
		Msg("draining: not accepting; open sessions go on until they end or the drain timeout")
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), plan.timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- plan.shutdown(ctx) }()
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
		case <-second:
			log.Warn().Int64("open", plan.open()).Msg("second signal: ending the drain now")
			cancel()
		case <-tick.C:
			open, elapsed := plan.open(), time.Since(start).Round(time.Second)
			log.Info().Int64("open", open).Str("elapsed", elapsed.String()).Msg("draining")
			notifyStatus(log, fmt.Sprintf("draining: %d open after %s of at most %s", open, elapsed, plan.timeout))
		}
	}
}

// stopAfter stops what had started when a later step failed with err. It
// returns err, with the error of stopping joined when there is one, and
// keeps the exit code err carries.
func stopAfter(err error, stop func(context.Context) error) error {
	serr := stopWithin(stop)
	if serr == nil {
		return err
	}
	joined := errors.Join(err, fmt.Errorf("stopping: %w", serr))
	if ec, ok := err.(cli.ExitCoder); ok {
		return cli.Exit(joined, ec.ExitCode())
	}
	return joined
}

// stopWithin runs stop with a stopTimeout deadline.
func stopWithin(stop func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return stop(ctx)
}

// stopSignals receives SIGINT and SIGTERM from the start of the process
// (main calls catchStopSignals), so that one that arrives while a server
// command is still starting, its first listeners already accepting, drains
// and stops it once it serves, rather than ending it at once (Go's default):
// a supervisor or test that stops what it saw listen got "signal:
// terminated" and dropped sessions. Two fit: the first starts the drain, a
// second ends it.
var stopSignals = make(chan os.Signal, 2)

// catchStopSignals routes SIGINT and SIGTERM to stopSignals; calling it
// again does nothing more.
func catchStopSignals() { signal.Notify(stopSignals, syscall.SIGINT, syscall.SIGTERM) }

// reloadSignals receives SIGHUP from the start of the process, so that one
// that arrives while a server is still starting is neither fatal (Go's
// default) nor lost: it is handled once the server runs.
var reloadSignals = make(chan os.Signal, 1)

// upgradeSignals receives SIGUSR2 (a live upgrade) the same way.
var upgradeSignals = make(chan os.Signal, 1)

// catchReloadSignals routes SIGHUP to reloadSignals and SIGUSR2 to
// upgradeSignals; calling it again does nothing more.
func catchReloadSignals() {
	signal.Notify(reloadSignals, syscall.SIGHUP)
	signal.Notify(upgradeSignals, syscall.SIGUSR2)
}

// upgradeOnSignal handles a SIGUSR2 and reports whether a new process took
// over (this one then drains and exits).
func upgradeOnSignal(log zerolog.Logger, plan *drainPlan) bool {
	if plan == nil || plan.upgrade == nil {
		log.Warn().Msg(errNoUpgrade.Error())
		return false
	}
	log.Info().Msg("SIGUSR2: live upgrade")
	ok, err := plan.upgrade()
	if err != nil {
		log.Error().Err(err).Msg("live upgrade failed: this process goes on serving")
	}
	return ok
}

// reloadOnSignal handles a SIGHUP: it reloads with the plan's reload, telling
// a service manager RELOADING=1 and then READY=1 again (ready is the status
// line), and logs the outcome; a failed reload leaves everything running.
func reloadOnSignal(log zerolog.Logger, plan *drainPlan, ready string) {
	if plan == nil || plan.reload == nil {
		log.Warn().Msg("SIGHUP: this command has no configuration to reload; ignored")
		return
	}
	notifyReloading(log, "reloading the configuration after SIGHUP")
	if err := plan.reload(); err != nil {
		log.Error().Err(err).Msg("reload failed: the running configuration stays")
	}
	if ready != "" {
		notifyReady(log, ready)
	}
}
