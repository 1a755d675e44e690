package gometrics

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	httppprof "net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsMux serves what tidegate's --metrics-listen serves that this
// package reads: the Go collector and the heap profile; gcs counts the
// profile requests that asked for a GC.
func metricsMux(gcs *atomic.Int32) *http.ServeMux {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("gc") != "" {
			gcs.Add(1)
		}
		httppprof.Index(w, r)
	})
	return mux
}

func TestScrapeCollectAndProfile(t *testing.T) {
	var gcs atomic.Int32
	ts := httptest.NewServer(metricsMux(&gcs))
	defer ts.Close()
	ctx := context.Background()
	m := New(ts.Listener.Addr().String()) // host:port, as --metrics-listen prints it
	if err := m.WaitReady(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := m.CollectGarbage(ctx); err != nil {
		t.Fatal(err)
	}
	if n := gcs.Load(); n != 2 {
		t.Fatalf("%d forced GCs, want 2 (the second empties the sync.Pool victim caches)", n)
	}
	v, err := m.Scrape(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v["go_memstats_heap_alloc_bytes"] <= 0 || v["go_goroutines"] < 1 {
		t.Fatalf("scraped heap %v, goroutines %v: want both positive", v["go_memstats_heap_alloc_bytes"], v["go_goroutines"])
	}
	if _, ok := v[`go_gc_duration_seconds{quantile="0.5"}`]; !ok {
		t.Fatal("a labelled sample is missing: labels are part of the name")
	}
	path := filepath.Join(t.TempDir(), "heap.pb.gz")
	if err := m.SaveHeapProfile(ctx, path, true); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A profile is gzipped protobuf whose string table names the sample types.
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("the saved heap profile is not gzipped: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "inuse_space") {
		t.Fatal("the saved profile is not a heap profile (no inuse_space sample type)")
	}
}

func TestErrorsNameTheRequest(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	ts.Close() // nothing listens any more
	m := New(ts.URL)
	err := m.WaitReady(context.Background(), 50*time.Millisecond)
	if err == nil {
		t.Fatal("WaitReady returned nil with nothing listening")
	}
	if want := ts.URL + "/metrics"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %s", err, want)
	}
	ts2 := httptest.NewServer(http.NotFoundHandler())
	defer ts2.Close()
	if _, err := New(ts2.URL).Scrape(context.Background()); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a 404 gave %v, want an error with the status", err)
	}
}
