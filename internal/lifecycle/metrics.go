package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"os"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/adminaccess"
	"github.com/tidegate/tidegate/reactor/acceptor"
)

// MetricsOptions is what the metrics listener serves, and where.
type MetricsOptions struct {
	// Addr is the TCP address to listen on when Listener is nil.
	Addr string
	// Listener, when set, is served instead of listening on Addr: the one a
	// live upgrade handed over.
	Listener net.Listener
	// Admin, when set, is served at /api/ and / (the proxy's admin API and
	// status page).
	Admin http.Handler
	// Collectors are exported beside the Go and process collectors and the
	// registry's reactor collector.
	Collectors []prometheus.Collector
	// Log gets the error that ends serving, should one other than a
	// shutdown end it.
	Log zerolog.Logger
	// MaxConns is how many connections the listener holds at once (0:
	// DefaultMetricsMaxConns); further ones wait in the backlog.
	MaxConns int
	// IdleTimeout closes a keep-alive connection idle this long (0: 30 s).
	IdleTimeout time.Duration
	// Policy decides who may read, profile and write on every route
	// (package adminaccess); nil is DefaultPolicy.
	Policy *adminaccess.Policy
}

// DefaultPolicy is the policy of a command that configures none: reads
// over loopback only, no profiles, no writes.
func DefaultPolicy() *adminaccess.Policy {
	return adminaccess.New(adminaccess.Rules{}, adminaccess.Knobs{})
}

// MetricsServer serves, on one listener, Prometheus /metrics, a registry's
// /healthz, /readyz and /-/reload, profiles under /debug/pprof/ and,
// optionally, an admin handler. A nil *MetricsServer is one that is off:
// its Addr is nil and Shutdown does nothing.
type MetricsServer struct {
	ln     net.Listener
	capped *capListener // ln with its cap, as served
	srv    *http.Server
}

// ServeMetrics starts serving h and o's handlers in the background on o's
// listener or address. It returns once the listener is bound.
func ServeMetrics(h *Registry, o MetricsOptions) (*MetricsServer, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(liveHeap())), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range append([]prometheus.Collector{h.Collector()}, o.Collectors...) {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	maxConns := o.MaxConns
	if maxConns <= 0 {
		maxConns = DefaultMetricsMaxConns
	}
	capped := newCapListener(maxConns, metricsReserve)
	if err := reg.Register(capped.collector()); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	ln := o.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen(acceptor.BindNetwork("tcp", o.Addr), o.Addr); err != nil {
			return nil, listenError(o.Addr, err)
		}
	}
	capped.Listener = ln
	policy := o.Policy
	if policy == nil {
		policy = DefaultPolicy()
	}
	m := &MetricsServer{ln: ln, capped: capped, srv: newMetricsHTTPServer(newMetricsMux(h, reg, o.Admin, policy), o.IdleTimeout)}
	go func() {
		if err := m.srv.Serve(capped); !errors.Is(err, http.ErrServerClosed) {
			o.Log.Error().Err(err).Str("listen", ln.Addr().String()).Msg("metrics: serving ended")
		}
	}()
	return m, nil
}

// listenError says that listening on addr failed, naming addr once: the
// error of net.Listen names the address it tried when it got as far as
// binding ("listen tcp4 ADDR: bind: ...") and not when the address did not
// resolve.
func listenError(addr string, err error) error {
	if oe := (*net.OpError)(nil); errors.As(err, &oe) && oe.Addr != nil && oe.Addr.String() == addr {
		return fmt.Errorf("metrics: %w", err)
	}
	return fmt.Errorf("metrics listen on %s: %w", addr, err)
}

// newMetricsMux routes the metrics listener's paths, each under its class
// of policy (package adminaccess). It is the one place that says what the
// listener serves, and to whom.
func newMetricsMux(h *Registry, reg *prometheus.Registry, admin http.Handler, policy *adminaccess.Policy) *http.ServeMux {
	mux := http.NewServeMux()
	// Public: scrapers and probes read these from anywhere; the checks'
	// details are a read.
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", h.reportHandler(false, policy))
	mux.HandleFunc("/readyz", h.reportHandler(true, policy))
	reload := policy.Write("reloading the configuration", "SIGHUP still reloads it", http.HandlerFunc(h.reloadHandler))
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, r *http.Request) {
		// A command with nothing to reload says so to anyone: there is no
		// write to guard.
		if h.reload.Load() == nil {
			h.reloadHandler(w, r)
			return
		}
		reload.ServeHTTP(w, r)
	})
	mux.Handle("/debug/pprof/", policy.Profiles(http.HandlerFunc(httppprof.Index)))
	mux.Handle("/debug/pprof/profile", policy.Profiles(http.HandlerFunc(httppprof.Profile)))
	if admin != nil {
		mux.Handle("/api/", policy.Read(admin))
		send := policy.Write("sending players to another server", "", admin)
		mux.Handle("POST /api/v1/send", send)
		mux.Handle("POST /api/v1/sessions/{id}/send", send)
		mux.Handle("/{$}", policy.Read(admin))
	}
	return mux
}

// newMetricsHTTPServer is the one place that builds the metrics listener's
// http.Server: its limits go here (metricsconns.go says why each is what it
// is). idle is the keep-alive idle timeout, 0 for metricsIdleTimeout.
func newMetricsHTTPServer(handler http.Handler, idle time.Duration) *http.Server {
	if idle <= 0 {
		idle = metricsIdleTimeout
	}
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: metricsReadHeaderTimeout,
		ReadTimeout:       metricsReadTimeout,
		WriteTimeout:      metricsWriteTimeout,
		IdleTimeout:       idle,
		MaxHeaderBytes:    metricsMaxHeaderBytes,
	}
}

// MetricsPaths names what the metrics listener serves, for the line that
// says it listens: with the admin API when admin, with the profiles when
// profiles.
func MetricsPaths(admin, profiles bool) string {
	paths := "/metrics /healthz /readyz"
	if profiles {
		paths += " /debug/pprof/"
	}
	if admin {
		paths += " /api/v1/ /"
	}
	return paths
}

// Addr is the bound address, nil when m is off.
func (m *MetricsServer) Addr() net.Addr {
	if m == nil {
		return nil
	}
	return m.ln.Addr()
}

// Shutdown stops accepting and waits for the requests in progress, as
// http.Server.Shutdown does; it closes the listener. It does nothing when m
// is off.
func (m *MetricsServer) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	err := m.srv.Shutdown(ctx)
	// Shutdown closes only the listeners Serve has begun to track: one
	// called right after ServeMetrics can come before Serve does.
	_ = m.capped.Close()
	return err
}

// listenerFile is a duplicate of the listener's socket, for a live upgrade
// to hand over; nil when m is off or its listener is not TCP.
func (m *MetricsServer) listenerFile() *os.File {
	if m == nil {
		return nil
	}
	tl, ok := m.ln.(*net.TCPListener)
	if !ok {
		return nil
	}
	f, err := tl.File()
	if err != nil {
		return nil
	}
	return f
}

// liveHeap adds two runtime/metrics figures to the Go collector's:
// go_gc_heap_live_bytes (/gc/heap/live:bytes), the heap the last GC found
// live, and go_cpu_classes_gc_total_cpu_seconds_total, the CPU the GC has
// taken. Memory per session is the first over the sessions
// (go_memstats_heap_alloc_bytes also counts what was allocated since,
// which after a forced GC by a heap profile request is that profile's own
// garbage: 1.7 MB measured with 5,000 sessions); the second is what a
// lower GOGC costs.
func liveHeap() collectors.GoRuntimeMetricsRule {
	return collectors.GoRuntimeMetricsRule{
		Matcher: regexp.MustCompile(`^(/gc/heap/live:bytes|/cpu/classes/gc/total:cpu-seconds)$`),
	}
}
