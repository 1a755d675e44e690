package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/tlvserver"
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
	if code != http.StatusOK || live.checkNames() != "proxy" {
		t.Fatalf("/healthz: %d, checks %s", code, live.checkNames())
	}
	var h reactor.Health
	live.detail(t, "proxy", &h)
	if !h.Running || len(h.Listeners) != 1 || !h.Listeners[0].Alive || h.Listeners[0].State != "accepting" ||
		!strings.HasPrefix(h.Listeners[0].Addr, "127.0.0.1:") {
		t.Fatalf("/healthz proxy detail: %+v", h)
	}

	// A few checks have passed by now or will have: the backend stays up.
	time.Sleep(60 * time.Millisecond)
	code, ready := getReport(t, addr, "/readyz")
	if code != http.StatusOK || ready.checkNames() != "proxy,draining,backends" {
		t.Fatalf("/readyz: %d, checks %s", code, ready.checkNames())
	}
	var b backendsDetail
	ready.detail(t, "backends", &b)
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
	if got := ready.checkNames(); got != "proxy,draining,!backends" {
		t.Fatalf("/readyz checks %s, want only backends failing", got)
	}
	var b backendsDetail
	ready.detail(t, "backends", &b)
	if !slices.Equal(b.GroupsDown, []string{"main"}) || len(b.Backends) != 1 || b.Backends[0].Up ||
		!strings.Contains(b.Backends[0].LastError, "refused") {
		t.Fatalf("/readyz backends detail: %+v", b)
	}
	// Liveness does not depend on the backends.
	if code, live := getReport(t, addr, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz %d with the backends down: %s", code, live.checkNames())
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
			names := strings.Join(tc.servers, ",")
			if code, r := getReport(t, addr, "/healthz"); code != http.StatusOK || r.checkNames() != names {
				t.Fatalf("/healthz %d, checks %s; want 200, %s", code, r.checkNames(), names)
			}
			if code, r := getReport(t, addr, "/readyz"); code != http.StatusOK || r.checkNames() != names+",draining" {
				t.Fatalf("/readyz %d, checks %s; want 200, %s,draining", code, r.checkNames(), names)
			}
		})
	}
}

// TestStoppedServerFailsHealthz stops a server under a running metrics
// listener; draining fails only readiness.
func TestStoppedServerFailsHealthz(t *testing.T) {
	srv, err := tlvserver.New(tlvserver.Config{Reactor: reactor.Config{Addrs: []string{"127.0.0.1:0"}, Loops: 1, Logger: zerolog.Nop()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	h := newHealthRegistry()
	h.addServer("tlv", srv.Reactor())
	addr, stopMetrics, err := serveMetrics("127.0.0.1:0", h, nil, tlvserver.NewCollector(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer stopMetrics(context.Background()) //nolint:errcheck

	h.SetDraining(true)
	if code, r := getReport(t, addr.String(), "/readyz"); code != http.StatusServiceUnavailable || r.checkNames() != "tlv,!draining" {
		t.Fatalf("draining: /readyz %d, checks %s", code, r.checkNames())
	}
	if code, _ := getReport(t, addr.String(), "/healthz"); code != http.StatusOK {
		t.Fatalf("draining: /healthz %d, want 200", code)
	}
	h.SetDraining(false)
	if code, _ := getReport(t, addr.String(), "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz %d after draining ended, want 200", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	code, r := getReport(t, addr.String(), "/healthz")
	if code != http.StatusServiceUnavailable || r.checkNames() != "!tlv" {
		t.Fatalf("stopped: /healthz %d, checks %s", code, r.checkNames())
	}
	var hs reactor.Health
	r.detail(t, "tlv", &hs)
	if hs.Running || len(hs.Listeners) != 1 || hs.Listeners[0].Alive || hs.Listeners[0].State != "stopped" {
		t.Fatalf("stopped: /healthz detail %+v", hs)
	}
	if code, _ := getReport(t, addr.String(), "/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("stopped: /readyz %d, want 503", code)
	}
	_, metrics := get(t, addr.String(), "/metrics")
	if !strings.Contains(string(metrics), `tidegate_engine_up{server="tlv"} 0`) {
		t.Fatal("/metrics does not report the stopped engine")
	}
}
