package lifecycle

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/tlvserver"
)

// getReport fetches /healthz or /readyz from addr and decodes it.
func getReport(t *testing.T, addr, path string) (int, testserver.HealthReport) {
	t.Helper()
	return testserver.GetHealth(t, "http://"+addr+path)
}

// serve serves h on a loopback metrics listener until the test ends and
// returns its address.
func serve(t *testing.T, h *Registry, o MetricsOptions) string {
	t.Helper()
	o.Addr = "127.0.0.1:0"
	m, err := ServeMetrics(h, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return m.Addr().String()
}

// TestReadinessFromState: the checks read the state they check on every
// request, liveness checks first, then draining, then readiness checks, in
// the order added; a failing readiness check fails /readyz only.
func TestReadinessFromState(t *testing.T) {
	h := NewRegistry()
	var up, connected atomic.Bool
	up.Store(true)
	h.AddReadiness("store", func() (bool, any) { return connected.Load(), map[string]bool{"connected": connected.Load()} })
	h.live = append(h.live, check{name: "engine", run: func() (bool, any) { return up.Load(), nil }})
	addr := serve(t, h, MetricsOptions{Log: zerolog.Nop()})

	if code, r := getReport(t, addr, "/readyz"); code != http.StatusServiceUnavailable || r.Names() != "engine,draining,!store" || r.PID != os.Getpid() {
		t.Fatalf("store down: /readyz %d, checks %s, pid %d", code, r.Names(), r.PID)
	}
	if code, r := getReport(t, addr, "/healthz"); code != http.StatusOK || r.Names() != "engine" {
		t.Fatalf("store down: /healthz %d, checks %s; want 200, engine", code, r.Names())
	}
	connected.Store(true)
	if code, r := getReport(t, addr, "/readyz"); code != http.StatusOK || r.Names() != "engine,draining,store" {
		t.Fatalf("store up: /readyz %d, checks %s", code, r.Names())
	}
	up.Store(false)
	if code, r := getReport(t, addr, "/healthz"); code != http.StatusServiceUnavailable || r.Names() != "!engine" {
		t.Fatalf("engine down: /healthz %d, checks %s", code, r.Names())
	}
	if r := h.Report(true); r.OK || len(r.Checks) != 3 {
		t.Fatalf("Report(true) = %+v, want 3 checks, failing", r)
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
	h := NewRegistry()
	h.AddServer("tlv", srv.Reactor())
	addr := serve(t, h, MetricsOptions{Collectors: []prometheus.Collector{tlvserver.NewCollector(srv)}})

	h.SetDraining(true)
	if code, r := getReport(t, addr, "/readyz"); code != http.StatusServiceUnavailable || r.Names() != "tlv,!draining" {
		t.Fatalf("draining: /readyz %d, checks %s", code, r.Names())
	}
	if code, _ := getReport(t, addr, "/healthz"); code != http.StatusOK {
		t.Fatalf("draining: /healthz %d, want 200", code)
	}
	h.SetDraining(false)
	if code, _ := getReport(t, addr, "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz %d after draining ended, want 200", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	code, r := getReport(t, addr, "/healthz")
	if code != http.StatusServiceUnavailable || r.Names() != "!tlv" {
		t.Fatalf("stopped: /healthz %d, checks %s", code, r.Names())
	}
	var hs reactor.Health
	r.Detail(t, "tlv", &hs)
	if hs.Running || len(hs.Listeners) != 1 || hs.Listeners[0].Alive || hs.Listeners[0].State != "stopped" {
		t.Fatalf("stopped: /healthz detail %+v", hs)
	}
	if code, _ := getReport(t, addr, "/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("stopped: /readyz %d, want 503", code)
	}
	_, metrics, _ := testserver.Get(t, "http://"+addr+"/metrics")
	if !strings.Contains(string(metrics), `tidegate_engine_up{server="tlv"} 0`) {
		t.Fatal("/metrics does not report the stopped engine")
	}
}
