package soak

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tidegate/tidegate/benchmarks/gometrics"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/procstat"
)

// Sample is the proxy as seen at one moment of the run.
type Sample struct {
	// At is the time since the load started, in seconds; Segment is 0
	// before the live upgrade and 1 after it (another process); PID is the
	// proxy's process.
	At      float64 `json:"t_s"`
	Segment int     `json:"segment"`
	PID     int     `json:"pid"`
	// From /proc/PID: RSS, open descriptors and OS threads.
	RSSBytes int64 `json:"rss_bytes"`
	FDs      int   `json:"fds"`
	Threads  int   `json:"threads"`
	// From /metrics: the live heap (go_gc_heap_live_bytes, or
	// go_memstats_heap_alloc_bytes where it is missing), goroutines and
	// the bytes queued for output (tidegate_buffer_queued_bytes).
	HeapLiveBytes float64 `json:"heap_live_bytes"`
	Goroutines    int     `json:"goroutines"`
	// GnetWorkers is gnet's worker pool (tidegate_gnet_workers, 0 where
	// the server does not export it): one worker per registration in
	// flight, kept 10 s after, so it follows how fast the loops take new
	// connections, not a leak; the slope test counts goroutines without it.
	GnetWorkers int     `json:"gnet_workers"`
	QueuedBytes float64 `json:"queued_bytes"`
	// The churn sessions' logins and echoes since the previous sample:
	// their count and the median and 99th percentile, in ms.
	Latencies    int64   `json:"latencies"`
	LatencyP50Ms float64 `json:"latency_p50_ms"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	// The descriptor budget from /metrics: what it counts as used
	// (tidegate_fd_accounted, the figure its admission compares with the
	// limit), the times accepting paused at a limit since the process
	// started (tidegate_accept_pauses_total: the soak sets no session
	// limit, so only the budget pauses it) and the metrics connections
	// closed for want of descriptors
	// (tidegate_metrics_connections_refused_total).
	FDAccounted    float64 `json:"fd_accounted"`
	AcceptPauses   float64 `json:"accept_pauses"`
	MetricsRefused float64 `json:"metrics_refused"`
	// ConnectFailures is the proxy's failed backend connects since the
	// process started (tidegate_proxy_backend_connect_failures_total), 0
	// for another server.
	ConnectFailures float64 `json:"connect_failures"`
	// Error says why the sample is incomplete (the process was handing
	// over); such a sample is left out of the slope test.
	Error string `json:"error,omitempty"`
}

// value returns the sample's figure.
func (s Sample) value(figure string) float64 {
	switch figure {
	case FigureRSS:
		return float64(s.RSSBytes)
	case FigureHeap:
		return s.HeapLiveBytes
	case FigureFDs:
		return float64(s.FDs)
	case FigureGoroutines:
		return float64(s.OwnGoroutines())
	case FigureThreads:
		return float64(s.Threads)
	case FigureQueued:
		return s.QueuedBytes
	case FigureLatency:
		return s.LatencyP99Ms
	}
	panic("soak: unknown figure " + figure)
}

// OwnGoroutines is the goroutines outside gnet's worker pool: the figure
// the slope test looks at. A registration that never ended would hold its
// worker and a descriptor; the descriptors are tested too.
func (s Sample) OwnGoroutines() int { return s.Goroutines - s.GnetWorkers }

// heapFigures are the metrics a live heap is read from, the first found.
var heapFigures = []string{"go_gc_heap_live_bytes", "go_memstats_heap_alloc_bytes"}

// queuedMetric is summed over its labels.
const queuedMetric = "tidegate_buffer_queued_bytes"

// The descriptor budget's metrics (Sample.FDAccounted and the next two),
// each summed over its labels; a process without them reads 0.
const (
	fdAccountedMetric    = "tidegate_fd_accounted"
	acceptPausesMetric   = "tidegate_accept_pauses_total"
	metricsRefusedMetric = "tidegate_metrics_connections_refused_total"
	connectFailedMetric  = "tidegate_proxy_backend_connect_failures_total"
	gnetWorkersMetric    = "tidegate_gnet_workers"
)

// sumOf sums metric over its labels in v, and reports whether it was there.
func sumOf(v map[string]float64, metric string) (sum float64, found bool) {
	for k, x := range v {
		if k == metric || strings.HasPrefix(k, metric+"{") {
			sum += x
			found = true
		}
	}
	return sum, found
}

// readProxy fills s's figures of the proxy pid from /proc and its metrics.
func readProxy(ctx context.Context, m *gometrics.Client, pid int, s *Sample) error {
	s.PID = pid
	p, err := procstat.Read([]int{pid})
	if err != nil {
		return err
	}
	s.RSSBytes, s.FDs, s.Threads = p.RSSBytes, p.FDs, p.Threads
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := m.Scrape(ctx)
	if err != nil {
		return err
	}
	heap := false
	for _, k := range heapFigures {
		if x, ok := v[k]; ok {
			s.HeapLiveBytes, heap = x, true
			break
		}
	}
	g, ok := v["go_goroutines"]
	if !heap || !ok {
		return fmt.Errorf("%s/metrics lacks go_goroutines or all of %v", m.Base, heapFigures)
	}
	s.Goroutines = int(g)
	s.FDAccounted, _ = sumOf(v, fdAccountedMetric)
	s.AcceptPauses, _ = sumOf(v, acceptPausesMetric)
	s.MetricsRefused, _ = sumOf(v, metricsRefusedMetric)
	s.ConnectFailures, _ = sumOf(v, connectFailedMetric)
	w, _ := sumOf(v, gnetWorkersMetric)
	s.GnetWorkers = int(w)
	var found bool
	if s.QueuedBytes, found = sumOf(v, queuedMetric); !found {
		return fmt.Errorf("%s/metrics lacks %s", m.Base, queuedMetric)
	}
	return nil
}

// newMetricsClient reads the proxy's metrics address without keep-alive
// (harness.NoKeepAlive): a connection to the old process must not be
// reused after the upgrade.
func newMetricsClient(addr string) *gometrics.Client {
	m := gometrics.New(addr)
	m.HTTP = harness.NoKeepAlive(5 * time.Second)
	return m
}
