package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/lifecycle"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor"
)

// proxyConfig writes a proxy configuration with one minecraft listener on an
// ephemeral port and one group, main, of the backend at backend, actively
// checked by TCP connects, down after one failure.
func proxyConfig(t *testing.T, backend string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proxy.yaml")
	yaml := `listeners:
  - listen: 127.0.0.1:0
default_group: main
groups:
  main:
    backends:
      - {addr: ` + backend + `}
health:
  failures: 1
  interval: 20ms
  timeout: 500ms
  check: tcp
loops: 1
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// acceptor is a TCP listener that accepts connections and closes them, for
// the proxy's TCP checks to pass.
func acceptor(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// refusedAddr returns a loopback address where nothing listens.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func TestProxyHealthyEndpoints(t *testing.T) {
	addr := runCommand(t, "proxy", "--config", proxyConfig(t, acceptor(t)))

	code, live := getReport(t, addr, "/healthz")
	if code != http.StatusOK || live.Names() != "proxy" {
		t.Fatalf("/healthz: %d, checks %s", code, live.Names())
	}
	var h reactor.Health
	live.Detail(t, "proxy", &h)
	if !h.Running || len(h.Listeners) != 1 || !h.Listeners[0].Alive || h.Listeners[0].State != "accepting" ||
		!strings.HasPrefix(h.Listeners[0].Addr, "127.0.0.1:") {
		t.Fatalf("/healthz proxy detail: %+v", h)
	}

	// A few checks have passed by now or will have: the backend stays up.
	time.Sleep(60 * time.Millisecond)
	code, ready := getReport(t, addr, "/readyz")
	if code != http.StatusOK || ready.Names() != "proxy,draining,backends" {
		t.Fatalf("/readyz: %d, checks %s", code, ready.Names())
	}
	var b lifecycle.BackendsDetail
	ready.Detail(t, "backends", &b)
	if len(b.GroupsDown) != 0 || len(b.Backends) != 1 || !b.Backends[0].Up || b.Backends[0].Group != "main" {
		t.Fatalf("/readyz backends detail: %+v", b)
	}

	code, metrics := get(t, addr, "/metrics")
	for _, want := range []string{`tidegate_engine_up{server="proxy"} 1`, `tidegate_proxy_backend_up{addr=`, "tidegate_fd_limit "} {
		if code != http.StatusOK || !strings.Contains(string(metrics), want) {
			t.Fatalf("/metrics (%d) lacks %s", code, want)
		}
	}
}

func TestProxyReadyzNamesGroupDown(t *testing.T) {
	addr := runCommand(t, "proxy", "--config", proxyConfig(t, refusedAddr(t)))
	var ready report
	waitfor.Check(t, "/readyz to fail with a refused backend", func() error {
		code, r := getReport(t, addr, "/readyz")
		if code != http.StatusServiceUnavailable {
			return fmt.Errorf("still %d", code)
		}
		ready = r
		return nil
	})
	if got := ready.Names(); got != "proxy,draining,!backends" {
		t.Fatalf("/readyz checks %s, want only backends failing", got)
	}
	var b lifecycle.BackendsDetail
	ready.Detail(t, "backends", &b)
	if !slices.Equal(b.GroupsDown, []string{"main"}) || len(b.Backends) != 1 || b.Backends[0].Up ||
		!strings.Contains(b.Backends[0].LastError, "refused") {
		t.Fatalf("/readyz backends detail: %+v", b)
	}
	// Liveness does not depend on the backends.
	if code, live := getReport(t, addr, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz %d with the backends down: %s", code, live.Names())
	}
}

func TestServeAndPushAndBackendMetrics(t *testing.T) {
	cases := []struct {
		args    []string
		servers []string
		metric  string
	}{
		{[]string{"serve", "--listen", "127.0.0.1:0", "--loops", "1"}, []string{"tlv"}, "tidegate_tlv_requests_total 0"},
		{[]string{"push", "--publish-listen", "127.0.0.1:0", "--subscribe-listen", "127.0.0.1:0", "--loops", "1",
			"--publish-loops", "1"}, []string{"publish", "subscribe"}, "tidegate_push_published_events_total 0"},
		{[]string{"backend", "--listen", "127.0.0.1:0", "--loops", "1"}, []string{"backend"}, "tidegate_accepted_connections"},
	}
	for _, tc := range cases {
		t.Run(tc.args[0], func(t *testing.T) {
			addr := runCommand(t, tc.args...)
			code, body := get(t, addr, "/metrics")
			if code != http.StatusOK || !strings.Contains(string(body), tc.metric) {
				t.Fatalf("/metrics (%d) lacks %s", code, tc.metric)
			}
			for _, s := range tc.servers {
				if want := `tidegate_engine_up{server="` + s + `"} 1`; !strings.Contains(string(body), want) {
					t.Fatalf("/metrics lacks %s", want)
				}
			}
			// Every command exports the process's queued output; serve and
			// backend have the buffer budget on by default.
			budget := []string{"tidegate_buffer_queued_bytes 0"}
			if tc.args[0] != "push" {
				budget = append(budget, fmt.Sprintf(`tidegate_buffer_budget_bytes{server=%q} %g`, tc.servers[0], float64(defaultBufferBudget)),
					fmt.Sprintf(`tidegate_paused_connections{server=%q} 0`, tc.servers[0]))
			}
			for _, want := range budget {
				if !strings.Contains(string(body), want) {
					t.Fatalf("/metrics lacks %s", want)
				}
			}
			names := strings.Join(tc.servers, ",")
			if code, r := getReport(t, addr, "/healthz"); code != http.StatusOK || r.Names() != names {
				t.Fatalf("/healthz %d, checks %s; want 200, %s", code, r.Names(), names)
			}
			if code, r := getReport(t, addr, "/readyz"); code != http.StatusOK || r.Names() != names+",draining" {
				t.Fatalf("/readyz %d, checks %s; want 200, %s,draining", code, r.Names(), names)
			}
		})
	}
}
