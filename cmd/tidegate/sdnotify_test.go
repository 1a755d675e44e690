package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/notifysock"
)

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
					name = notifysock.AbstractName()
				}
				sock := notifysock.Listen(t, name)
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
				ready := notifysock.Read(t, sock, 20*time.Second)
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
				stopping := notifysock.Read(t, sock, 10*time.Second)
				if !strings.HasPrefix(stopping, "STOPPING=1\nSTATUS=") || !strings.Contains(stopping, "terminated") {
					t.Fatalf("notification after SIGTERM %q: want STOPPING=1 and a STATUS naming the signal", stopping)
				}
				ch.wantExit(t, 20*time.Second, "SIGTERM")
			})
		}
	}
}
