package pushload

import (
	"context"
	"net/http"
	"net/http/httptest"
	httppprof "net/http/pprof"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/session/pushserver"
)

// startMetered runs a push server on ephemeral ports with a metrics
// listener like the command's: Go, process and push collectors, and pprof.
func startMetered(t *testing.T, mod func(*pushserver.Config)) (pub, sub, metrics string) {
	t.Helper()
	srv, pub, sub := testserver.Push(t, mod)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), pushserver.NewCollector(srv))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return pub, sub, ts.URL
}

func TestStuckMeasuresMemoryPerStuckSubscriber(t *testing.T) {
	pub, sub, metrics := startMetered(t, func(c *pushserver.Config) {
		c.Window = 20 * time.Millisecond
		c.HighWatermark = 128 << 10
		c.MaxBatchBytes = 32 << 10
	})
	cfg := StuckConfig{
		Load: Config{PublishAddr: pub, SubscribeAddr: sub, Subscribers: 2, Topic: "stuck", Rate: 1000,
			EventsPerFrame: 10, PayloadSize: 512, Drain: 3 * time.Second, ClientLoops: 1},
		Stuck: 20, StuckRcvBuf: 4096, MetricsURL: metrics, FillTimeout: 30 * time.Second, Steady: 300 * time.Millisecond,
		// In one process with the race detector, RSS grows with more than
		// the server: the gate here only has to pass; the bound itself is
		// tested in session/pushserver and measured with separate processes.
		MaxBytesPerStuck: 16 << 20,
	}
	r, err := Stuck(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if r.StuckOpenAtMeasure != 20 || r.HeapPerStuck <= 0 || r.SteadyDropShare < 0.9 || r.Dropped == 0 ||
		r.ReaderDelivered != r.ReaderExpected || r.ReaderExpected == 0 {
		t.Fatalf("result %s", r)
	}
	t.Logf("%s", r)

	// A gate the server cannot meet fails the run, with what was measured.
	cfg.MaxBytesPerStuck = 1
	r, err = Stuck(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "per stuck subscriber") || r.HeapPerStuck <= 0 {
		t.Fatalf("run past its gate: %v; %s", err, r)
	}
}

func TestStuckFailsWithoutMetrics(t *testing.T) {
	pub, sub, _ := startMetered(t, func(*pushserver.Config) {})
	_, err := Stuck(context.Background(), StuckConfig{
		Load:  Config{PublishAddr: pub, SubscribeAddr: sub, Subscribers: 1, Topic: "x", Rate: 10, EventsPerFrame: 1, PayloadSize: 8},
		Stuck: 1, MetricsURL: "http://127.0.0.1:1", FillTimeout: time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("err %v, want the metrics address named", err)
	}
}
