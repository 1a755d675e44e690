package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/adminaccess"
	"github.com/tidegate/tidegate/internal/lifecycle"
	"github.com/tidegate/tidegate/reactor/fdbudget"
)

// Exit codes of the long-running commands; 0 is a clean stop.
const (
	// exitRuntime: an engine ended without a shutdown being asked for, or
	// something else failed while running. A supervisor should restart.
	exitRuntime = lifecycle.ExitFailure
	// exitConfig: the configuration or a flag is invalid, or a connection
	// limit cannot fit in the descriptor limit. Restarting will not help.
	exitConfig = 2
)

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
	if fl := (*fdbudget.LimitError)(nil); errors.As(err, &fl) {
		return configError(err)
	}
	return err
}

// metricsFlag is --metrics-listen, which startMetrics reads.
func metricsFlag() cli.Flag {
	return &cli.StringFlag{Name: "metrics-listen", Usage: "serve Prometheus /metrics, /healthz, /readyz, with --pprof /debug/pprof/ (and for the proxy its admin API and status page) on this `ADDR` (off when empty; keep it private)"}
}

// metricsMaxConnsFlag is --metrics-max-conns, which startMetrics reads.
func metricsMaxConnsFlag() cli.Flag {
	return &cli.IntFlag{Name: "metrics-max-conns", Value: lifecycle.DefaultMetricsMaxConns,
		Usage: "hold at most `N` connections to --metrics-listen at once (more wait in the backlog); each takes a descriptor, at most half of the proxy's reserve"}
}

// profilesKnob says, in the refusal of a profile, how to turn profiles on.
const profilesKnob = "start the command with --pprof to serve them (to loopback only, unless remote reads are allowed)"

// pprofFlag is --pprof, which startMetrics and the proxy's policy read.
func pprofFlag() cli.Flag {
	return &cli.BoolFlag{Name: "pprof", Usage: "serve Go profiles at /debug/pprof/ on --metrics-listen (to loopback only, unless remote reads are allowed; ?seconds= at most 60)"}
}

// startMetrics serves metrics and h's health endpoints on --metrics-listen,
// when it is set, on inherited when that is not nil (a live upgrade's), and
// admin (nil for none) at /api/ and / beside them, every route under policy
// (nil: reads over loopback only, no writes, profiles as --pprof says). It returns
// the bound address ("" when off) and the server (nil when off).
func startMetrics(c *cli.Context, log zerolog.Logger, h *lifecycle.Registry, inherited net.Listener, admin http.Handler, policy *adminaccess.Policy, cs ...prometheus.Collector) (string, *lifecycle.MetricsServer, error) {
	addr := c.String("metrics-listen")
	if addr == "" {
		if inherited != nil { // the old process served metrics; this one does not
			_ = inherited.Close()
		}
		return "", nil, nil
	}
	if policy == nil {
		policy = adminaccess.New(adminaccess.Rules{Profiles: c.Bool("pprof")}, adminaccess.Knobs{Profiles: profilesKnob})
	}
	m, err := lifecycle.ServeMetrics(h, lifecycle.MetricsOptions{Addr: addr, Listener: inherited, Admin: admin, Collectors: cs, Log: log,
		MaxConns: c.Int("metrics-max-conns"), Policy: policy})
	if err != nil {
		return "", nil, err
	}
	bound := m.Addr().String()
	log.Info().Str("listen", bound).Msg("metrics listening: " + lifecycle.MetricsPaths(admin != nil, policy.Rules().Profiles))
	return bound, m, nil
}

// run serves with proc until a signal (lifecycle.Process.Run) and gives its
// error the exit status it ends the process with.
func run(c *cli.Context, proc *lifecycle.Process, o lifecycle.RunOptions) error {
	return runError(proc.Run(c.Context, o))
}

// runError is the error of a run that ended with err: exitRuntime when an
// engine ended on its own, so that a supervisor restarts the process.
func runError(err error) error {
	if ee := (*lifecycle.EngineEndedError)(nil); errors.As(err, &ee) {
		return cli.Exit(fmt.Errorf("tidegate: %w", err), exitRuntime)
	}
	return err
}

// stopAfter stops what had started when a later step failed with err. It
// returns err, with the error of stopping joined when there is one, and
// keeps the exit code err carries.
func stopAfter(err error, stop func(context.Context) error) error {
	serr := lifecycle.StopWithin(stop)
	if serr == nil {
		return err
	}
	joined := errors.Join(err, fmt.Errorf("stopping: %w", serr))
	if ec, ok := err.(cli.ExitCoder); ok {
		return cli.Exit(joined, ec.ExitCode())
	}
	return joined
}
