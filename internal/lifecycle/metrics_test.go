package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
)

// post posts to url and returns the status and body.
func post(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestMetricsEndpoints: the listener serves the metrics with the Go
// runtime's figures, profiles, the admin handler at / and /api/ (and
// nothing else there), and /-/reload: 404 before a reload is set, 405 for
// a GET, 409 with the problem when the reload fails, 200 when it works.
func TestMetricsEndpoints(t *testing.T) {
	h := NewRegistry()
	admin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "admin "+r.URL.Path) })
	addr := serve(t, h, MetricsOptions{Admin: admin, Log: zerolog.Nop()})
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
	if code, _, _ := testserver.Get(t, base+"/-/reload"); code != http.StatusMethodNotAllowed {
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
