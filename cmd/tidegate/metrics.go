package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"os"
	"regexp"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveMetrics serves Prometheus metrics (the Go and process collectors,
// h's reactor collector and cs), h's /healthz and /readyz, profiles and,
// when admin is not nil, admin at /api/ and / (the proxy's admin API and
// status page) on addr. It returns the bound address and the function that
// stops it.
func serveMetrics(addr string, h *healthRegistry, admin http.Handler, cs ...prometheus.Collector) (net.Addr, func(context.Context) error, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(liveHeap), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range append([]prometheus.Collector{h.collector()}, cs...) {
		if err := reg.Register(c); err != nil {
			return nil, nil, fmt.Errorf("metrics: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", h.handler(false))
	mux.HandleFunc("/readyz", h.handler(true))
	mux.HandleFunc("/-/reload", h.reloadHandler)
	// Profiles for operators; the metrics address is theirs to keep private.
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	if admin != nil {
		mux.Handle("/api/", admin)
		mux.Handle("/{$}", admin)
	}
	metricsMu.Lock()
	ln := metricsInherited // from a live upgrade
	metricsInherited = nil
	metricsMu.Unlock()
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			if strings.Contains(err.Error(), addr) { // "listen tcp ADDR: bind: ..." names it
				return nil, nil, fmt.Errorf("metrics: %w", err)
			}
			return nil, nil, fmt.Errorf("metrics listen on %s: %w", addr, err)
		}
	}
	metricsMu.Lock()
	metricsServing = ln
	metricsMu.Unlock()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr(), srv.Shutdown, nil
}

// liveHeap adds two runtime/metrics figures to the Go collector's:
// go_gc_heap_live_bytes (/gc/heap/live:bytes), the heap the last GC found
// live, and go_cpu_classes_gc_total_cpu_seconds_total, the CPU the GC has
// taken. Memory per session is the first over the sessions
// (go_memstats_heap_alloc_bytes also counts what was allocated since,
// which after a forced GC by a heap profile request is that profile's own
// garbage: 1.7 MB measured with 5,000 sessions); the second is what a
// lower GOGC costs.
var liveHeap = collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{
	Matcher: regexp.MustCompile(`^(/gc/heap/live:bytes|/cpu/classes/gc/total:cpu-seconds)$`),
})

// startCPUProfile writes a CPU profile to path until the returned function runs.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
