package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/tlv"
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

// flipServer echoes every byte but flips the one at stream offset flipAt of
// each connection (a test server: a goroutine per connection).
func flipServer(t *testing.T, flipAt int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
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
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// tlvServer is tidegate's TLV echo server, in process.
func tlvServer(t *testing.T) string {
	t.Helper()
	srv, err := tlv.New(tlv.Config{Reactor: reactor.Config{Addrs: []string{"127.0.0.1:0"}, Loops: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return srv.Addr().String()
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

// TestBenchRPSExitsNonZeroOnErrors: a run in which one response came back
// wrong prints its table and exits non-zero; the same run against a correct
// server exits 0.
func TestBenchRPSExitsNonZeroOnErrors(t *testing.T) {
	args := []string{"bench", "rps", "--clients", "2", "--payloads", "50", "--warmups", "0", "--payload-size", "16",
		"--loops", "1", "--log-level", "warn", "--addr"}
	out, err := runApp(t, append(args, tlvServer(t))...)
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
