package standin

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

func TestMain(m *testing.M) {
	if code, ok := Run(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestRunIgnoresOtherArguments(t *testing.T) {
	for _, args := range [][]string{nil, {"-test.run=X"}, {"backend", "--listen", "x"}} {
		if _, ok := Run(args); ok {
			t.Errorf("Run(%q) claimed the arguments", args)
		}
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// start runs this test binary as `args...` and waits until addr accepts.
func start(t *testing.T, addr string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A test that fails with the command still running (here, or before it
	// calls stop) kills it and shows what it wrote.
	t.Cleanup(func() {
		if t.Failed() && cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Logf("%q wrote:\n%s", args, log.String())
		}
	})
	waitfor.Check(t, fmt.Sprintf("%q to listen on %s", args, addr), func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	})
	return cmd
}

// stop sends SIGTERM and wants a clean exit.
func stop(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%q after SIGTERM: %v", cmd.Args[1:], err)
	}
}

// echo sends msg on a connection to addr and wants it back.
func echo(t *testing.T, addr string, msg []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo via %s: %x, %v; want %x", addr, got, err, msg)
	}
}

func TestServeAndProxyStandIns(t *testing.T) {
	serve := freeAddr(t)
	srv := start(t, serve, "serve", "--listen", serve, "--loops", "1", "--log-level", "warn")
	tlv := []byte{0x81, 0, 0, 0, 3, 'a', 'b', 'c'} // keep-alive type 1, 4-byte length 3
	echo(t, serve, tlv)

	// A raw proxy in front of the TLV server relays the same bytes.
	listen := freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "proxy.yaml")
	yaml := "listeners: [{listen: " + listen + ", mode: raw, group: main}]\ngroups: {main: {backends: [{addr: " + serve + "}]}}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	px := start(t, listen, "proxy", "--config", cfg, "--log-level", "warn")
	echo(t, listen, tlv)
	stop(t, px)
	stop(t, srv)

	// A flag it does not know is an error, not a silent default.
	cmd := exec.Command(os.Args[0], "serve", "--listen", freeAddr(t), "--metrics", "x")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("serve with an unknown flag exited 0:\n%s", out)
	}
}
