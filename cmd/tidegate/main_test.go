package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/lifecycle"
	"github.com/tidegate/tidegate/internal/testkit/leaktest"
	"github.com/tidegate/tidegate/internal/testkit/logbuf"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// TestMain fails the run when the tests leave goroutines running or, on
// Linux, descriptors open.
func TestMain(m *testing.M) {
	if args := os.Getenv(childArgsEnv); args != "" {
		os.Exit(runChild(args)) // a command under test in its own process
	}
	os.Exit(leaktest.MainFDs(m))
}

// syncBuffer is what a command logs into while a test reads it.
type syncBuffer struct{ logbuf.Buffer }

// logLines decodes the JSON log lines written so far.
func (s *syncBuffer) logLines(t *testing.T) []map[string]any {
	t.Helper()
	return s.JSONLines()
}

// testApp is the app with the long-running commands, logging to errw; an
// error that carries an exit code is returned instead of exiting. Its
// commands catch signals as main's do.
func testApp(errw io.Writer) *cli.App {
	proc := lifecycle.Start()
	return &cli.App{
		Name:           "tidegate",
		Flags:          logFlags(),
		Commands:       []*cli.Command{proxyCommand(proc), serveCommand(proc), pushCommand(proc), backendCommand(proc)},
		Writer:         io.Discard,
		ErrWriter:      errw,
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// runCommand runs a command in the background with JSON logs until the
// test ends, and returns the bound address of its --metrics-listen (which
// it sets to an ephemeral loopback port).
func runCommand(t *testing.T, args ...string) string {
	t.Helper()
	return runCommandMetrics(t, "127.0.0.1:0", args...)
}

// runCommandMetrics is runCommand with --metrics-listen at metrics.
func runCommandMetrics(t *testing.T, metrics string, args ...string) string {
	t.Helper()
	addr, _ := runCommandLogs(t, metrics, args...)
	return addr
}

// runCommandLogs is runCommandMetrics that also returns the command's log.
func runCommandLogs(t *testing.T, metrics string, args ...string) (string, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	argv := append([]string{"tidegate"}, args...)
	argv = append(argv, "--metrics-listen", metrics, "--log-format", "json", "--log-level", "info")
	go func() { done <- testApp(logs).RunContext(ctx, argv) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s ended with %v", args[0], err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("%s did not stop within 15 s", args[0])
		}
	})
	var addr string
	waitfor.Check(t, args[0]+"'s metrics listener", func() error {
		for _, l := range logs.logLines(t) {
			if msg, _ := l["message"].(string); strings.HasPrefix(msg, "metrics listening") {
				addr = l["listen"].(string)
				return nil
			}
		}
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("%s ended before its metrics listened: %v\n%s", args[0], err, logs)
		default:
		}
		return fmt.Errorf("not in its log yet:\n%s", logs)
	})
	return addr, logs
}

// get fetches path from addr without keeping the connection.
func get(t *testing.T, addr, path string) (int, []byte) {
	t.Helper()
	code, body, _ := testserver.Get(t, "http://"+addr+path)
	return code, body
}

// report is lifecycle.Report as a client decodes it.
type report = testserver.HealthReport

// getReport fetches /healthz or /readyz from addr and decodes it.
func getReport(t *testing.T, addr, path string) (int, report) {
	t.Helper()
	return testserver.GetHealth(t, "http://"+addr+path)
}

// exitCode returns the status the process exits with after a command
// returns err: as cli.HandleExitCoder, only an error that is itself a
// cli.ExitCoder sets it; main exits 1 on any other.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ec, ok := err.(cli.ExitCoder); ok {
		return ec.ExitCode()
	}
	return 1
}
