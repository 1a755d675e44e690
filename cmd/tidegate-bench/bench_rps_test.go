package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
)

// runApp runs the bench binary's commands in process and returns what they
// printed and the error they returned (with its exit code, not exiting).
func runApp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runAppContext(t, context.Background(), args...)
}

// runAppContext is runApp under ctx (its end is an interruption).
func runAppContext(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &out
	app.ExitErrHandler = func(*cli.Context, error) {}
	err := app.RunContext(ctx, append([]string{"tidegate-bench"}, args...))
	return out.String(), err
}

func exitCode(err error) int {
	if ec, ok := err.(cli.ExitCoder); ok {
		return ec.ExitCode()
	}
	if err != nil {
		return 1
	}
	return 0
}

// flipServer echoes every byte but flips the one at stream offset flipAt of
// each connection.
func flipServer(t *testing.T, flipAt int) string {
	t.Helper()
	return testserver.Conns(t, func(c net.Conn) {
		buf := make([]byte, 4096)
		for off := 0; ; {
			n, err := c.Read(buf)
			if i := flipAt - off; i >= 0 && i < n {
				buf[i] ^= 0x40
			}
			off += n
			if n > 0 {
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
}

// TestBenchRPSExitsNonZeroOnErrors: a run in which one response came back
// wrong prints its table and exits non-zero; the same run against a correct
// server exits 0.
func TestBenchRPSExitsNonZeroOnErrors(t *testing.T) {
	args := []string{"bench", "rps", "--clients", "2", "--payloads", "50", "--warmups", "0", "--payload-size", "16",
		"--loops", "1", "--log-level", "warn", "--addr"}
	out, err := runApp(t, append(args, testserver.TLV(t, 1))...)
	if err != nil {
		t.Fatalf("clean run: %v\n%s", err, out)
	}
	// Offset 10 is inside the body of the first response (5-byte header).
	out, err = runApp(t, append(args, flipServer(t, 10))...)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "FAILED") {
		t.Fatalf("run with a wrong response: exit %d, %v\n%s", exitCode(err), err, out)
	}
	if !strings.Contains(out, "errors") {
		t.Errorf("the table was not printed before the failure:\n%s", out)
	}
}
