// Command tidegate-bench holds tidegate's load generators (`bench ...`) and
// the peer servers they compare it with (`peer ...`). It is its own binary so
// that the production binary, cmd/tidegate, links none of their code: no
// report writers, charts or fonts. The servers under test are started from a
// tidegate binary (--tidegate-bin, by default the one next to this program).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"
	"github.com/tidegate/tidegate/internal/revision"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/sockopt"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "tidegate-bench:", err)
		os.Exit(1)
	}
}

// newApp is the command table: the load generators, the peers, version.
func newApp() *cli.App {
	return &cli.App{
		Name:  "tidegate-bench",
		Usage: "load generators and peer servers that measure tidegate",
		Description: "The servers and proxies under test run as their own processes: tidegate's from the\n" +
			"tidegate binary (--tidegate-bin), the peers from this one. Every command takes\n" +
			"--log-level and --log-format, and exits non-zero when a run had an error.",
		Version: version,
		Commands: []*cli.Command{
			{Name: "bench", Usage: "load generators and paired benchmarks", Subcommands: benchSubcommands()},
			peerCommand(),
			{
				Name:  "version",
				Usage: "print the version",
				Flags: logflags.Flags(),
				Action: func(c *cli.Context) error {
					fmt.Fprintf(c.App.Writer, "tidegate-bench %s\n", version)
					return nil
				},
			},
		},
	}
}

// stormSetup reads what a login storm command starts with: its logger
// (logflags) and its --sources.
func stormSetup(c *cli.Context) (zerolog.Logger, []net.IP, error) {
	log, err := logflags.New(c)
	if err != nil {
		return log, nil, err
	}
	sources, err := sockopt.ParseSources(c.String("sources"))
	if err != nil {
		return log, nil, fmt.Errorf("--sources: %w", err)
	}
	return log, sources, nil
}

// sourcesFlag is --sources, the local addresses a login storm's
// connections come from (sockopt.ParseSources reads it).
func sourcesFlag() cli.Flag {
	return &cli.StringFlag{Name: "sources", Value: "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4", Usage: "local source addresses, comma-separated"}
}

// tidegateBinFlag is --tidegate-bin, which tidegateBinary reads.
func tidegateBinFlag() cli.Flag {
	return &cli.StringFlag{Name: "tidegate-bin", Usage: "the tidegate `BINARY` run as the server, proxy or backend under test " +
		"(default: tidegate next to this program, else tidegate on PATH)"}
}

// tidegateEnvFlag is --tidegate-env, which tidegateEnv reads; examples are
// the command's own, such as "GOMAXPROCS=1, GOGC=50".
func tidegateEnvFlag(examples string) cli.Flag {
	return &cli.GenericFlag{Name: "tidegate-env", Value: &envValues{},
		Usage: "`KEY=VALUE` added to each tidegate proxy's environment (" + examples + "); repeatable, commas are part of the value"}
}

// envValues holds the --tidegate-env values, one per occurrence of the
// flag. A StringSliceFlag would split each at its commas, and make
// GODEBUG=gctrace=1,madvdontneed=1 two variables.
type envValues []string

// Set implements flag.Value: it appends s whole.
func (e *envValues) Set(s string) error {
	*e = append(*e, s)
	return nil
}

// String implements flag.Value.
func (e *envValues) String() string {
	if e == nil {
		return ""
	}
	return strings.Join(*e, " ")
}

// tidegateEnv returns the --tidegate-env values, each checked to be
// KEY=VALUE with a key an environment can hold.
func tidegateEnv(c *cli.Context) ([]string, error) {
	var env []string
	if v, ok := c.Generic("tidegate-env").(*envValues); ok && v != nil {
		env = *v
	}
	for _, kv := range env {
		if err := checkEnv(kv); err != nil {
			return nil, fmt.Errorf("--tidegate-env %q: %w", kv, err)
		}
	}
	return env, nil
}

// checkEnv fails unless kv is KEY=VALUE with a key of no space, tab or
// newline, and no NUL byte in either.
func checkEnv(kv string) error {
	key, _, ok := strings.Cut(kv, "=")
	switch {
	case !ok:
		return errors.New("want KEY=VALUE, such as GOGC=50")
	case key == "":
		return errors.New("no key before the '='")
	case strings.ContainsAny(key, " \t\n"):
		return fmt.Errorf("key %q has white space", key)
	case strings.ContainsRune(kv, 0):
		return errors.New("it holds a NUL byte")
	}
	return nil
}

// tidegateBinary returns the tidegate binary to start: --tidegate-bin, else
// the tidegate next to this program (make build puts both in bin/), else
// tidegate on PATH. This binary cannot stand in: it has no serve, proxy or
// backend command.
func tidegateBinary(c *cli.Context) (string, error) {
	if p := c.String("tidegate-bin"); p != "" {
		return p, nil
	}
	exe, err := os.Executable()
	if err == nil {
		p := filepath.Join(filepath.Dir(exe), "tidegate")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath("tidegate"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no tidegate binary next to %q or on PATH: build it with make build or give --tidegate-bin", exe)
}

// thisProgram returns this binary's path, which the peers and the internal
// worker commands are started from.
func thisProgram(what string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locating this program to start %s: %w", what, err)
	}
	return exe, nil
}

// sessionContext is the context of a benchmark command: cancelled on SIGINT
// or SIGTERM.
func sessionContext(c *cli.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
}

// peerStopTimeout bounds how long a peer server may take to stop.
const peerStopTimeout = 10 * time.Second

// serveUntilSignal runs a peer server until SIGINT, SIGTERM or the end of
// c's context, or until failed reports that it ended by itself, then stops
// it within peerStopTimeout. failed may be nil.
func serveUntilSignal(c *cli.Context, log zerolog.Logger, failed <-chan error, stop func(context.Context) error) error {
	ctx, cancel := sessionContext(c)
	defer cancel()
	var err error
	select {
	case <-ctx.Done():
		log.Info().Msg("shutting down")
	case err = <-failed:
		if err == nil {
			err = errors.New("the server stopped by itself")
		}
		log.Error().Err(err).Msg("server ended: stopping")
	}
	sctx, scancel := context.WithTimeout(context.Background(), peerStopTimeout)
	defer scancel()
	if serr := stop(sctx); serr != nil {
		err = errors.Join(err, fmt.Errorf("stopping: %w", serr))
	}
	return err
}

// serveListener runs serve (an accept loop that returns nil after shut)
// until a signal, or until it ends by itself on an accept error, then calls
// shut and waits for serve to return.
func serveListener(c *cli.Context, log zerolog.Logger, serve, shut func() error) error {
	done, failed := make(chan struct{}), make(chan error, 1)
	var serveErr error
	go func() { serveErr = serve(); close(done); failed <- serveErr }()
	return serveUntilSignal(c, log, failed, func(context.Context) error {
		err := shut()
		<-done
		if serveErr != nil {
			err = serveErr
		}
		return err
	})
}

// flagsOnly starts a benchmark command that takes flags only: it returns
// the command's logger (logflags), or an error naming the first argument
// given; name names the command in it.
func flagsOnly(c *cli.Context, name string) (zerolog.Logger, error) {
	log, err := logflags.New(c)
	if err != nil {
		return log, err
	}
	if c.NArg() > 0 {
		return log, fmt.Errorf("%s: unexpected argument %q (flags only)", name, c.Args().First())
	}
	return log, nil
}

// printResult writes a benchmark's result to standard output: with asJSON
// under --json, else with table.
func printResult[R any](c *cli.Context, res R, asJSON, table func(io.Writer, R) error) error {
	if c.Bool("json") {
		return asJSON(os.Stdout, res)
	}
	return table(os.Stdout, res)
}

// writeResultsFile writes a benchmark's results file with write into the
// directory of --out, named with --label, and logs its path; without --out
// it writes nothing.
func writeResultsFile[R any](c *cli.Context, log zerolog.Logger, res R, write func(dir, label string, r R) (string, error)) error {
	dir := c.String("out")
	if dir == "" {
		return nil
	}
	path, err := write(dir, c.String("label"), res)
	if err != nil {
		return err
	}
	log.Info().Str("file", path).Msg("results written")
	return nil
}

// resultsFlags are --json, --out and --label, which printAndWrite reads,
// for a benchmark whose results file is DATE-kind[-LABEL].md.
func resultsFlags(kind string) []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "print the result as JSON instead of a table"},
		&cli.StringFlag{Name: "out", Usage: "write DATE-" + kind + "[-LABEL].md and its .json into `DIR`"},
		&cli.StringFlag{Name: "label", Usage: "suffix of the results file name"},
	}
}

// binaryBench is what a benchmark that starts the tidegate binary starts
// with: its logger (flags only, no arguments), the binary (tidegateBinary)
// and a context that SIGINT and SIGTERM cancel.
func binaryBench(c *cli.Context, name string) (zerolog.Logger, string, context.Context, context.CancelFunc, error) {
	log, err := flagsOnly(c, name)
	if err != nil {
		return log, "", nil, nil, err
	}
	exe, err := tidegateBinary(c)
	if err != nil {
		return log, "", nil, nil, err
	}
	ctx, stop := sessionContext(c)
	return log, exe, ctx, stop, nil
}

// printAndWrite prints res (printResult) and writes its results file
// (writeResultsFile): what every benchmark with a report does with it.
func printAndWrite[R any](c *cli.Context, log zerolog.Logger, res R, asJSON, table func(io.Writer, R) error, write func(dir, label string, r R) (string, error)) error {
	if err := printResult(c, res, asJSON, table); err != nil {
		return err
	}
	return writeResultsFile(c, log, res, write)
}

// binaryMeta describes a run of this command started at started, with the
// version the tidegate binary exe prints ("" when it says nothing: the
// report then leaves it out).
func binaryMeta(started time.Time, exe string) harness.BinaryMeta {
	v, _ := harness.BinaryVersion(context.Background(), exe)
	return harness.BinaryMeta{Meta: runMeta(started), ProxyVersion: v}
}

// failedExit is the exit, status 1, of a benchmark (what) whose run had
// failures: it counts and lists them.
func failedExit(what string, failures []string) error {
	return cli.Exit(fmt.Sprintf("%s benchmark FAILED: %d failures: %s", what, len(failures), strings.Join(failures, "; ")), 1)
}

// runMeta describes a run of this command started at started, for a
// results file.
func runMeta(started time.Time) harness.Meta {
	return harness.NewMeta(commandLine(os.Args), started, toolRevision())
}

// commandLine writes argv as a shell command, quoting what needs it.
func commandLine(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`;&|<>()*?[]#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// toolRevision is the revision of this program for the reports: make build's
// stamp, else Go's VCS stamp, else a note that it has neither.
func toolRevision() string {
	if rev := revision.This(); rev != "" {
		return rev
	}
	return "unknown (not built by make build: no revision stamp)"
}

// withLog is a command's Action that starts with its logger (logflags).
func withLog(action func(c *cli.Context, log zerolog.Logger) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		log, err := logflags.New(c)
		if err != nil {
			return err
		}
		return action(c, log)
	}
}
