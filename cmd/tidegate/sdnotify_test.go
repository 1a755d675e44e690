package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// notifyListener is a service manager's end of NOTIFY_SOCKET: a datagram
// socket at name (a path, or "@name" in the abstract namespace), set as
// NOTIFY_SOCKET for the test.
func notifyListener(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen unixgram %q: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	t.Setenv(notifySocketEnv, name)
	return c
}

// readNotify reads one datagram from c within d.
func readNotify(t *testing.T, c *net.UnixConn, d time.Duration) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("reading a notification: %v", err)
	}
	return string(buf[:n])
}

// abstractName is a name in the abstract namespace no other test uses.
func abstractName() string {
	return fmt.Sprintf("@tidegate-test-%d-%d", os.Getpid(), time.Now().UnixNano())
}

func TestSDNotifyUnsetIsANoop(t *testing.T) {
	t.Setenv(notifySocketEnv, "")
	sent, err := sdNotify("READY=1")
	if sent || err != nil {
		t.Fatalf("sdNotify without %s = %v, %v; want false, nil", notifySocketEnv, sent, err)
	}
	notifyReady(zerolog.Nop(), "nothing") // must not panic or block
}

func TestSDNotifyPathAndAbstract(t *testing.T) {
	forms := map[string]func(t *testing.T) string{
		"path": func(t *testing.T) string { return filepath.Join(t.TempDir(), "notify") },
		"abstract": func(t *testing.T) string {
			if runtime.GOOS != "linux" {
				t.Skip("abstract unix sockets are Linux's")
			}
			return abstractName()
		},
	}
	for form, name := range forms {
		t.Run(form, func(t *testing.T) {
			c := notifyListener(t, name(t))
			log := zerolog.Nop()
			notifyReady(log, listeningStatus("127.0.0.1:9225", "proxy on 0.0.0.0:25577 (minecraft)"))
			if got, want := readNotify(t, c, 5*time.Second), "READY=1\nSTATUS=proxy on 0.0.0.0:25577 (minecraft); metrics on 127.0.0.1:9225"; got != want {
				t.Errorf("ready: got %q, want %q", got, want)
			}
			notifyStopping(log, "draining after terminated:\n3 open")
			if got, want := readNotify(t, c, 5*time.Second), "STOPPING=1\nSTATUS=draining after terminated: 3 open"; got != want {
				t.Errorf("stopping: got %q, want %q (a newline in a status must not start an assignment)", got, want)
			}
			notifyStatus(log, "draining: 1 open")
			if got, want := readNotify(t, c, 5*time.Second), "STATUS=draining: 1 open"; got != want {
				t.Errorf("status: got %q, want %q", got, want)
			}
		})
	}
}

// TestSDNotifyReloading: RELOADING=1 carries MONOTONIC_USEC, the monotonic
// clock at the call, as Type=notify-reload wants.
func TestSDNotifyReloading(t *testing.T) {
	c := notifyListener(t, filepath.Join(t.TempDir(), "notify"))
	now := func() int64 {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		return ts.Nano() / 1e3
	}
	before := now()
	notifyReloading(zerolog.Nop(), "reloading /etc/tidegate/proxy.yaml")
	after := now()
	lines := strings.Split(readNotify(t, c, 5*time.Second), "\n")
	if len(lines) != 3 || lines[0] != "RELOADING=1" || !strings.HasPrefix(lines[1], "MONOTONIC_USEC=") ||
		lines[2] != "STATUS=reloading /etc/tidegate/proxy.yaml" {
		t.Fatalf("reloading: got %q", lines)
	}
	usec, err := strconv.ParseInt(strings.TrimPrefix(lines[1], "MONOTONIC_USEC="), 10, 64)
	if err != nil || usec < before || usec > after {
		t.Fatalf("MONOTONIC_USEC %q: want a number in [%d, %d] (%v)", lines[1], before, after, err)
	}
}

func TestSDNotifyErrors(t *testing.T) {
	for _, name := range []string{"relative/notify", "vsock:2:1234", "@"} {
		t.Setenv(notifySocketEnv, name)
		sent, err := sdNotify("READY=1")
		if !sent || err == nil || !strings.Contains(err.Error(), strconv.Quote(name)) {
			t.Errorf("%s=%q: got %v, %v; want true and an error naming the value", notifySocketEnv, name, sent, err)
		}
	}
	missing := filepath.Join(t.TempDir(), "nobody-listens")
	t.Setenv(notifySocketEnv, missing)
	if sent, err := sdNotify("READY=1"); !sent || err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("no socket at %s: got %v, %v; want true and an error naming it", missing, sent, err)
	}
}

// TestCommandsNotifyReadyAndStopping runs each long-running command with
// NOTIFY_SOCKET set: READY=1 arrives once it listens (a connection and
// /healthz succeed as soon as it is read), its STATUS names the bound
// addresses, and SIGTERM brings STOPPING=1 and exit 0.
func TestCommandsNotifyReadyAndStopping(t *testing.T) {
	for _, form := range []string{"path", "abstract"} {
		for _, command := range []string{"proxy", "serve", "push", "backend"} {
			t.Run(form+"/"+command, func(t *testing.T) {
				name := filepath.Join(t.TempDir(), "notify")
				if form == "abstract" {
					if runtime.GOOS != "linux" {
						t.Skip("abstract unix sockets are Linux's")
					}
					name = abstractName()
				}
				sock := notifyListener(t, name)
				listen, metrics := freePort(t), freePort(t)
				var args []string
				switch command {
				case "proxy":
					cfg := filepath.Join(t.TempDir(), "proxy.yaml")
					yaml := fmt.Sprintf("listeners: [{listen: %q, mode: raw, group: main}]\ngroups: {main: {backends: [{addr: %q}]}}\nloops: 1\n",
						listen, echoBackend(t))
					if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
						t.Fatal(err)
					}
					args = []string{"proxy", "--config", cfg}
				case "push":
					args = []string{"push", "--publish-listen", listen, "--subscribe-listen", freePort(t), "--loops", "1", "--stats-interval", "0"}
				default:
					args = []string{command, "--listen", listen, "--loops", "1"}
				}
				ch := startChild(t, 0, append(args, "--metrics-listen", metrics, "--log-level", "debug")...)
				ready := readNotify(t, sock, 20*time.Second)
				if !strings.HasPrefix(ready, "READY=1\nSTATUS=") || !strings.Contains(ready, listen) ||
					!strings.HasSuffix(ready, "; metrics on "+metrics) {
					t.Fatalf("first notification %q: want READY=1 and a STATUS naming %s and metrics on %s", ready, listen, metrics)
				}
				c, err := net.DialTimeout("tcp", listen, time.Second)
				if err != nil {
					t.Fatalf("connecting to %s right after READY=1: %v", listen, err)
				}
				_ = c.Close()
				resp, err := http.Get("http://" + metrics + "/healthz")
				if err != nil {
					t.Fatalf("/healthz right after READY=1: %v", err)
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("/healthz right after READY=1: %s", resp.Status)
				}
				if err := ch.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				stopping := readNotify(t, sock, 10*time.Second)
				if !strings.HasPrefix(stopping, "STOPPING=1\nSTATUS=") || !strings.Contains(stopping, "terminated") {
					t.Fatalf("notification after SIGTERM %q: want STOPPING=1 and a STATUS naming the signal", stopping)
				}
				ch.wantExit(t, 20*time.Second, "SIGTERM")
			})
		}
	}
}

// TestEngineEndedNotifiesStopping: when a server's loops end on their own,
// the service manager hears STOPPING=1 naming the server before the
// process exits with status 1 (which Restart=on-failure restarts).
func TestEngineEndedNotifiesStopping(t *testing.T) {
	sock := notifyListener(t, filepath.Join(t.TempDir(), "notify"))
	ended := &fakeEngine{done: make(chan struct{}), err: errors.New("boom")}
	close(ended.done)
	h := newHealthRegistry()
	h.engines = []namedEngine{{"tlv", ended}}
	err := runUntilSignalDrain(context.Background(), zerolog.Nop(), h, "TLV server on 127.0.0.1:1", nil,
		func(context.Context) error { return nil })
	if code := exitCode(err); code != exitRuntime {
		t.Fatalf("exit code %d (%v), want %d", code, err, exitRuntime)
	}
	if got, want := readNotify(t, sock, 5*time.Second), "READY=1\nSTATUS=TLV server on 127.0.0.1:1"; got != want {
		t.Fatalf("first notification %q, want %q", got, want)
	}
	if got := readNotify(t, sock, 5*time.Second); !strings.HasPrefix(got, "STOPPING=1\nSTATUS=tlv server: event loops ended (boom)") {
		t.Fatalf("second notification %q: want STOPPING=1 naming the server and why", got)
	}
}
