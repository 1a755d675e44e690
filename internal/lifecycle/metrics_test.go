package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/adminaccess"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
)

// testToken is the token the tests' policies take for writes.
const testToken = "lifecycle-test-token-0123"

// testPolicy is a policy with profiles on and testToken for writes.
func testPolicy() *adminaccess.Policy {
	return adminaccess.New(adminaccess.Rules{Profiles: true, Token: testToken}, adminaccess.Knobs{})
}

// post posts to url with testToken and returns the status and body.
func post(t *testing.T, url string) (int, string) {
	t.Helper()
	return testserver.Request(t, http.MethodPost, url, "Authorization", "Bearer "+testToken)
}

// TestMetricsEndpoints: the listener serves the metrics with the Go
// runtime's figures, profiles, the admin handler at / and /api/ (and
// nothing else there), and /-/reload: 404 before a reload is set, 405 for
// a GET, 409 with the problem when the reload fails, 200 when it works.
func TestMetricsEndpoints(t *testing.T) {
	h := NewRegistry()
	admin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "admin "+r.URL.Path) })
	addr := serve(t, h, MetricsOptions{Admin: admin, Log: zerolog.Nop(), Policy: testPolicy()})
	base := "http://" + addr

	code, body, _ := testserver.Get(t, base+"/metrics")
	for _, want := range []string{"go_gc_heap_live_bytes", "go_cpu_classes_gc_total_cpu_seconds_total", "process_open_fds"} {
		if code != http.StatusOK || !strings.Contains(string(body), want) {
			t.Fatalf("/metrics (%d) lacks %s", code, want)
		}
	}
	if code, _, _ := testserver.Get(t, base+"/debug/pprof/"); code != http.StatusOK {
		t.Fatalf("/debug/pprof/: %d", code)
	}
	for path, want := range map[string]string{"/": "admin /", "/api/v1/status": "admin /api/v1/status"} {
		if code, body, _ := testserver.Get(t, base+path); code != http.StatusOK || string(body) != want {
			t.Fatalf("%s: %d %q, want the admin handler", path, code, body)
		}
	}
	if code, _, _ := testserver.Get(t, base+"/elsewhere"); code != http.StatusNotFound {
		t.Fatalf("/elsewhere: %d, want 404", code)
	}

	if code, _ := post(t, base+"/-/reload"); code != http.StatusNotFound {
		t.Fatalf("POST /-/reload with nothing to reload: %d, want 404", code)
	}
	fail := errors.New("connect_timeout: want a positive duration")
	result := fail
	h.SetReload(func() error { return result })
	if code, _ := testserver.Request(t, http.MethodGet, base+"/-/reload", "Authorization", "Bearer "+testToken); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /-/reload: %d, want 405", code)
	}
	if code, body := post(t, base+"/-/reload"); code != http.StatusConflict || !strings.Contains(body, fail.Error()) {
		t.Fatalf("POST /-/reload that fails: %d %q, want 409 naming the problem", code, body)
	}
	result = nil
	if code, body := post(t, base+"/-/reload"); code != http.StatusOK || body != "reloaded\n" {
		t.Fatalf("POST /-/reload: %d %q, want 200", code, body)
	}
}

// TestMetricsShutdownAndOff: Shutdown closes the listener; a server that is
// off has no address and stops at once.
func TestMetricsShutdownAndOff(t *testing.T) {
	m, err := ServeMetrics(NewRegistry(), MetricsOptions{Addr: "127.0.0.1:0", Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	addr := m.Addr().String()
	if err := m.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("%s still accepts after Shutdown", addr)
	}
	var off *MetricsServer
	if off.Addr() != nil || off.Shutdown(context.Background()) != nil || off.listenerFile() != nil {
		t.Fatal("a nil MetricsServer must be off")
	}
}

// TestMetricsServesAnInheritedListener: the listener a live upgrade handed
// over is served instead of a new one, and its socket can be handed over
// again.
func TestMetricsServesAnInheritedListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ServeMetrics(NewRegistry(), MetricsOptions{Addr: "127.0.0.1:1", Listener: ln, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(context.Background()) //nolint:errcheck
	if m.Addr().String() != ln.Addr().String() {
		t.Fatalf("serving %s, want the inherited %s", m.Addr(), ln.Addr())
	}
	if code, _ := getReport(t, ln.Addr().String(), "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz on the inherited listener: %d", code)
	}
	f := m.listenerFile()
	if f == nil {
		t.Fatal("no socket to hand over")
	}
	f.Close()
}

// TestMetricsListenErrorNamesTheAddressOnce: a bind failure names the
// address as net.Listen does; one that never got to binding is told with
// the address.
func TestMetricsListenErrorNamesTheAddressOnce(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	_, err = ServeMetrics(NewRegistry(), MetricsOptions{Addr: addr})
	if err == nil || !strings.HasPrefix(err.Error(), "metrics: listen tcp4 "+addr+": ") || strings.Count(err.Error(), addr) != 1 {
		t.Fatalf("busy address: %v; want metrics: and net.Listen's error naming %s once", err, addr)
	}
	_, err = ServeMetrics(NewRegistry(), MetricsOptions{Addr: "127.0.0.1:http-alt-nonesuch"})
	if err == nil || !strings.HasPrefix(err.Error(), "metrics listen on 127.0.0.1:http-alt-nonesuch: ") {
		t.Fatalf("unknown port: %v; want the address named", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("unknown port: %v does not wrap net.Listen's error", err)
	}
}

// TestMetricsIPv4WildcardBindsIPv4: the metrics listener on 0.0.0.0 binds
// IPv4 only, as the proxy's listeners do, and reports 0.0.0.0, not [::].
func TestMetricsIPv4WildcardBindsIPv4(t *testing.T) {
	m, err := ServeMetrics(NewRegistry(), MetricsOptions{Addr: "0.0.0.0:0", Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	a, ok := m.Addr().(*net.TCPAddr)
	if !ok || a.IP.To4() == nil || !a.IP.IsUnspecified() {
		t.Fatalf("metrics listener on 0.0.0.0:0 reports %v, want 0.0.0.0:PORT", m.Addr())
	}
	if got := m.Addr().String(); got != fmt.Sprintf("0.0.0.0:%d", a.Port) {
		t.Errorf("metrics listener reports %s, want 0.0.0.0:%d", got, a.Port)
	}
}

// TestMetricsPolicyCoversEveryRoute: one policy guards every route of the
// listener. A Host that is not loopback or localhost (DNS rebinding) gets
// 403 from the admin handler, the profiles and /-/reload, token or not;
// /metrics, /healthz and /readyz still answer, the checks' details left
// out with why. The curl (Origin http://evil.example, Content-Type
// text/plain) does not reload even with the token; without a policy,
// profiles are off and writes refused.
func TestMetricsPolicyCoversEveryRoute(t *testing.T) {
	h := NewRegistry()
	var reloads atomic.Int32
	h.SetReload(func() error { reloads.Add(1); return nil })
	h.AddReadiness("store", func() (bool, any) { return true, map[string]string{"addr": "10.1.2.3:6379"} })
	admin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "admin "+r.URL.Path) })
	base := "http://" + serve(t, h, MetricsOptions{Admin: admin, Log: zerolog.Nop(), Policy: testPolicy()})
	auth := []string{"Authorization", "Bearer " + testToken}
	evil := append([]string{"Host", "evil.example"}, auth...)
	for _, path := range []string{"/", "/api/v1/config", "/debug/pprof/", "/debug/pprof/profile?seconds=1"} {
		if code, body := testserver.Request(t, http.MethodGet, base+path, evil...); code != http.StatusForbidden || !strings.Contains(body, "DNS rebinding") {
			t.Errorf("GET %s with Host evil.example: %d %s, want 403", path, code, body)
		}
	}
	if code, body := testserver.Request(t, http.MethodPost, base+"/-/reload", evil...); code != http.StatusForbidden || !strings.Contains(body, "DNS rebinding") {
		t.Errorf("POST /-/reload with Host evil.example and the token: %d %s, want 403", code, body)
	}
	if code, body := testserver.Request(t, http.MethodPost, base+"/-/reload", append([]string{"Origin", "http://evil.example", "Content-Type", "text/plain"}, auth...)...); code != http.StatusForbidden || !strings.Contains(body, "cross-site") {
		t.Errorf("the issue's curl with the token: %d %s, want 403", code, body)
	}
	if code, body := testserver.Request(t, http.MethodPost, base+"/-/reload"); code != http.StatusUnauthorized {
		t.Errorf("POST /-/reload without the token: %d %s, want 401", code, body)
	}
	if code, body := testserver.Request(t, http.MethodPost, base+"/-/reload", "Authorization", "Bearer wrong-token-0123456789"); code != http.StatusUnauthorized {
		t.Errorf("POST /-/reload with a wrong token: %d %s, want 401", code, body)
	}
	if n := reloads.Load(); n != 0 {
		t.Fatalf("%d reloads ran from refused requests", n)
	}
	if code, body := testserver.Request(t, http.MethodGet, base+"/debug/pprof/heap?seconds=3600"); code != http.StatusBadRequest {
		t.Errorf("seconds=3600: %d %s, want 400", code, body)
	}
	if code, body := testserver.Request(t, http.MethodGet, base+"/metrics", "Host", "evil.example"); code != http.StatusOK || !strings.Contains(body, "process_open_fds") {
		t.Errorf("/metrics with Host evil.example: %d, want 200", code)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		code, body := testserver.Request(t, http.MethodGet, base+path, "Host", "evil.example")
		var r Report
		if err := json.Unmarshal([]byte(body), &r); err != nil || code != http.StatusOK || !strings.Contains(r.DetailsHidden, "DNS rebinding") || strings.Contains(body, "10.1.2.3") {
			t.Errorf("%s with Host evil.example: %d %s (%v); want 200 without details, saying why", path, code, body, err)
		}
	}
	if code, body := testserver.Request(t, http.MethodGet, base+"/readyz"); code != http.StatusOK || !strings.Contains(body, "10.1.2.3:6379") || strings.Contains(body, "details_hidden") {
		t.Errorf("/readyz over loopback: %d %s, want the details", code, body)
	}

	off := "http://" + serve(t, h, MetricsOptions{Log: zerolog.Nop()})
	if code, body := testserver.Request(t, http.MethodGet, off+"/debug/pprof/"); code != http.StatusNotFound || !strings.Contains(body, "profiles are off") {
		t.Errorf("/debug/pprof/ without a policy: %d %s, want 404 saying profiles are off", code, body)
	}
	if code, body := testserver.Request(t, http.MethodPost, off+"/-/reload", auth...); code != http.StatusForbidden || !strings.Contains(body, "SIGHUP") {
		t.Errorf("POST /-/reload without a policy: %d %s, want 403 saying SIGHUP still reloads", code, body)
	}
	if code, body := post(t, base+"/-/reload"); code != http.StatusOK || reloads.Load() != 1 {
		t.Fatalf("POST /-/reload with the token: %d %s, %d reloads", code, body, reloads.Load())
	}
}
