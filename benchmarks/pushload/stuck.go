package pushload

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/benchmarks/gometrics"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/sockopt"
)

// StuckConfig describes a run with subscribers that never read: Load's
// publisher publishes at Load.Rate, Load.Subscribers TCP subscribers read
// and count everything, and Stuck SSE subscribers of the same topic send
// their request and never read a byte.
type StuckConfig struct {
	Load Config
	// Stuck is the number of SSE subscribers that never read.
	Stuck int
	// StuckRcvBuf is their SO_RCVBUF, set before connecting, so that the
	// kernel holds little for them and the server's own buffers fill; 0
	// leaves the system default.
	StuckRcvBuf int
	// MetricsURL is the server's metrics listener ("http://host:port"); the
	// run reads its counters and memory from /metrics and forces two GCs
	// with /debug/pprof/heap?gc=1 before each heap reading.
	MetricsURL string
	// FillTimeout bounds the wait until every stuck subscriber drops what it
	// is sent (saturation).
	FillTimeout time.Duration
	// Steady is how long publishing goes on after saturation before the
	// memory is read, still publishing.
	Steady time.Duration
	// MaxBytesPerStuck fails the run when the server's live heap or RSS grew
	// by more than this per stuck subscriber; 0 disables the gate.
	MaxBytesPerStuck int64
}

// StuckResult is the outcome of a stuck run. Memory figures are the server's:
// Heap is the live heap right after forced GCs (go_memstats_heap_alloc_bytes),
// HeapInuse the heap spans in use, RSS the resident set
// (process_resident_memory_bytes); PeakRSS the largest RSS seen while filling
// (sampled once a second).
type StuckResult struct {
	Stuck, Readers int

	HeapBefore, HeapAfter           int64
	HeapInuseBefore, HeapInuseAfter int64
	RSSBefore, RSSAfter, PeakRSS    int64
	// Per stuck subscriber: (after - before) / Stuck.
	HeapPerStuck, HeapInusePerStuck, RSSPerStuck, PeakRSSPerStuck float64

	// FillTime is how long it took until the stuck subscribers dropped
	// what they were sent.
	FillTime time.Duration
	// SteadyDropShare is the share of events due to stuck subscribers that
	// the server dropped during the steady period (1 when saturated).
	SteadyDropShare float64
	// Server counters over the run.
	Dropped, BudgetDropped, NotWritableCloses int64
	// StuckOpenAtMeasure is the number of SSE subscribers the server held
	// when the memory was read.
	StuckOpenAtMeasure int64

	// Readers: events published, events they should have got, events they got, order breaks.
	TotalPublished, ReaderExpected, ReaderDelivered, OutOfOrder int64
}

// String formats the result as one line.
func (r StuckResult) String() string {
	kib := func(v float64) string { return strconv.FormatFloat(v/1024, 'f', 1, 64) }
	return fmt.Sprintf("stuck=%d readers=%d fill=%v steady_drop_share=%.3f heap_per_stuck=%sKiB heap_inuse_per_stuck=%sKiB "+
		"rss_per_stuck=%sKiB peak_rss_per_stuck=%sKiB heap=%d->%d rss=%d->%d peak_rss=%d dropped=%d budget_dropped=%d "+
		"not_writable_closes=%d stuck_open=%d published=%d reader_expected=%d reader_delivered=%d lost=%d out_of_order=%d",
		r.Stuck, r.Readers, r.FillTime.Round(time.Millisecond), r.SteadyDropShare, kib(r.HeapPerStuck), kib(r.HeapInusePerStuck),
		kib(r.RSSPerStuck), kib(r.PeakRSSPerStuck), r.HeapBefore, r.HeapAfter, r.RSSBefore, r.RSSAfter, r.PeakRSS,
		r.Dropped, r.BudgetDropped, r.NotWritableCloses, r.StuckOpenAtMeasure, r.TotalPublished, r.ReaderExpected,
		r.ReaderDelivered, r.ReaderExpected-r.ReaderDelivered, r.OutOfOrder)
}

// Stuck performs one stuck run. It returns an error, with the result so far,
// when anything was lost or wrong: a reader missed or reordered an event, the
// stuck subscribers never saturated, the server closed some of them before
// the measurement, or the memory per stuck subscriber passed
// MaxBytesPerStuck.
func Stuck(ctx context.Context, cfg StuckConfig) (StuckResult, error) {
	lc := cfg.Load
	r := StuckResult{Stuck: cfg.Stuck, Readers: lc.Subscribers}
	if cfg.Stuck < 1 || lc.Subscribers < 0 || lc.Rate < 1 || lc.EventsPerFrame < 1 || lc.PayloadSize < 8 ||
		cfg.FillTimeout <= 0 || cfg.MetricsURL == "" {
		return r, fmt.Errorf("pushload: stuck %d, readers %d, rate %d, events per frame %d, payload %d, fill timeout %v, metrics %q: "+
			"need stuck >= 1, readers >= 0, positive rate, events per frame and fill timeout, payload >= 8 and a metrics URL",
			cfg.Stuck, lc.Subscribers, lc.Rate, lc.EventsPerFrame, lc.PayloadSize, cfg.FillTimeout, cfg.MetricsURL)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	m := metricsClient{gometrics.New(cfg.MetricsURL)}
	m.HTTP = &http.Client{Timeout: 10 * time.Second, Transport: tr}
	rd, err := startReaders(lc)
	if err != nil {
		return r, err
	}
	defer rd.close()

	before, err := m.sample(ctx, true)
	if err != nil {
		return r, err
	}
	r.HeapBefore, r.HeapInuseBefore, r.RSSBefore = before.heap, before.heapInuse, before.rss
	sseBefore := before.sse

	stuck, err := dialStuck(cfg)
	defer func() {
		for _, c := range stuck {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // reset: the server has nothing to drain
			}
			_ = c.Close()
		}
	}()
	if err != nil {
		return r, err
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		s, err := m.sample(ctx, false)
		if err != nil {
			return r, err
		}
		if s.sse-sseBefore >= int64(cfg.Stuck) {
			break
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("pushload: the server holds %d of %d stuck SSE subscribers after 30s", s.sse-sseBefore, cfg.Stuck)
		}
		time.Sleep(50 * time.Millisecond)
	}
	lc.Logger.Info().Int("stuck", cfg.Stuck).Msg("stuck subscribers connected")

	pc, err := net.DialTimeout("tcp", lc.PublishAddr, 5*time.Second)
	if err != nil {
		return r, fmt.Errorf("pushload: publisher: dial %s: %w", lc.PublishAddr, err)
	}
	defer pc.Close()
	var published atomic.Int64
	stop := make(chan struct{})
	pubErr := make(chan error, 1)
	go func() { pubErr <- publish(pc, lc, &published, stop) }()
	stopped := false
	stopPublishing := func() error {
		if stopped {
			return nil
		}
		stopped = true
		close(stop)
		return <-pubErr
	}
	defer func() { _ = stopPublishing() }()

	// Saturation: over one second, the server dropped at least 90% of
	// what it owed the stuck subscribers.
	start := time.Now()
	prev, err := m.sample(ctx, false)
	if err != nil {
		return r, err
	}
	r.PeakRSS = prev.rss
	for {
		if err := harness.Sleep(ctx, time.Second); err != nil {
			return r, err
		}
		cur, err := m.sample(ctx, false)
		if err != nil {
			return r, err
		}
		r.PeakRSS = max(r.PeakRSS, cur.rss)
		if share := dropShare(prev, cur, cfg.Stuck); share >= 0.9 {
			break
		}
		if time.Since(start) > cfg.FillTimeout {
			return r, fmt.Errorf("pushload: the stuck subscribers did not saturate within %v: %d events published, %d dropped in the last second",
				cfg.FillTimeout, cur.published-prev.published, cur.dropped-prev.dropped)
		}
		prev = cur
	}
	r.FillTime = time.Since(start)
	lc.Logger.Info().Dur("fill", r.FillTime).Msg("stuck subscribers saturated")
	steady0, err := m.sample(ctx, false)
	if err != nil {
		return r, err
	}
	for end := time.Now().Add(cfg.Steady); time.Now().Before(end); {
		if err := harness.Sleep(ctx, min(time.Second, time.Until(end))); err != nil {
			return r, err
		}
		s, err := m.sample(ctx, false)
		if err != nil {
			return r, err
		}
		r.PeakRSS = max(r.PeakRSS, s.rss)
	}
	after, err := m.sample(ctx, true)
	if err != nil {
		return r, err
	}
	r.PeakRSS = max(r.PeakRSS, after.rss)
	r.HeapAfter, r.HeapInuseAfter, r.RSSAfter = after.heap, after.heapInuse, after.rss
	r.StuckOpenAtMeasure = after.sse - sseBefore
	r.SteadyDropShare = dropShare(steady0, after, cfg.Stuck)
	n := float64(cfg.Stuck)
	r.HeapPerStuck = float64(r.HeapAfter-r.HeapBefore) / n
	r.HeapInusePerStuck = float64(r.HeapInuseAfter-r.HeapInuseBefore) / n
	r.RSSPerStuck = float64(r.RSSAfter-r.RSSBefore) / n
	r.PeakRSSPerStuck = float64(r.PeakRSS-r.RSSBefore) / n

	if err := stopPublishing(); err != nil {
		return r, err
	}
	r.TotalPublished = published.Load()
	r.ReaderExpected = r.TotalPublished * int64(lc.Subscribers)
	rd.drain(r.ReaderExpected, lc.Drain)
	r.ReaderDelivered, r.OutOfOrder, _ = rd.sum()
	end, err := m.sample(ctx, false)
	if err != nil {
		return r, err
	}
	r.Dropped, r.BudgetDropped = end.dropped-before.dropped, end.budgetDropped-before.budgetDropped
	r.NotWritableCloses = end.notWritable - before.notWritable

	var fails []string
	if err := rd.err(); err != nil {
		fails = append(fails, err.Error())
	}
	if r.ReaderDelivered != r.ReaderExpected || r.OutOfOrder != 0 {
		fails = append(fails, fmt.Sprintf("readers got %d of %d events, %d out of order", r.ReaderDelivered, r.ReaderExpected, r.OutOfOrder))
	}
	if r.StuckOpenAtMeasure != int64(cfg.Stuck) {
		fails = append(fails, fmt.Sprintf("the server held %d of %d stuck subscribers at the measurement (not-writable closes %d)",
			r.StuckOpenAtMeasure, cfg.Stuck, r.NotWritableCloses))
	}
	if r.SteadyDropShare < 0.9 {
		fails = append(fails, fmt.Sprintf("only %.3f of the events due to stuck subscribers were dropped in the steady period", r.SteadyDropShare))
	}
	if limit := float64(cfg.MaxBytesPerStuck); limit > 0 {
		for _, v := range []struct {
			name string
			per  float64
		}{{"live heap", r.HeapPerStuck}, {"RSS", r.RSSPerStuck}, {"peak RSS", r.PeakRSSPerStuck}} {
			if v.per > limit {
				fails = append(fails, fmt.Sprintf("%s per stuck subscriber %.0f bytes exceeds %d", v.name, v.per, cfg.MaxBytesPerStuck))
			}
		}
	}
	if len(fails) > 0 {
		return r, fmt.Errorf("pushload: stuck run failed: %s", strings.Join(fails, "; "))
	}
	return r, nil
}

// dropShare is the share of the events due to stuck subscribers between two
// samples that the server dropped.
func dropShare(a, b serverSample, stuck int) float64 {
	due := float64(b.published-a.published) * float64(stuck)
	if due <= 0 {
		return 0
	}
	return float64(b.dropped-a.dropped) / due
}

// dialStuck connects the stuck SSE subscribers and sends their requests.
func dialStuck(cfg StuckConfig) ([]net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, Control: sockopt.Control(cfg.StuckRcvBuf, 0, 0)}
	req := "GET /events?topic=" + url.QueryEscape(cfg.Load.Topic) + " HTTP/1.1\r\nHost: pushload\r\n\r\n"
	conns := make([]net.Conn, 0, cfg.Stuck)
	for i := 0; i < cfg.Stuck; i++ {
		c, err := d.Dial("tcp", cfg.Load.SubscribeAddr)
		if err != nil {
			return conns, fmt.Errorf("pushload: stuck subscriber %d: dial %s: %w", i, cfg.Load.SubscribeAddr, err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, req); err != nil {
			return conns, fmt.Errorf("pushload: stuck subscriber %d: request: %w", i, err)
		}
	}
	return conns, nil
}

// serverSample is what one scrape of the server's /metrics tells.
type serverSample struct {
	heap, heapInuse, rss                 int64
	sse, published, dropped, notWritable int64
	budgetDropped                        int64
}

type metricsClient struct{ *gometrics.Client }

// sample scrapes /metrics, after two forced GCs when gc is set so that the
// heap figure is the live heap.
func (m *metricsClient) sample(ctx context.Context, gc bool) (serverSample, error) {
	vals, err := m.Sample(ctx, gc)
	if err != nil {
		return serverSample{}, err
	}
	var missing []string
	get := func(name string) int64 {
		v, ok := vals[name]
		if !ok {
			missing = append(missing, name)
		}
		return int64(v)
	}
	s := serverSample{
		heap:          get("go_memstats_heap_alloc_bytes"),
		heapInuse:     get("go_memstats_heap_inuse_bytes"),
		rss:           get("process_resident_memory_bytes"),
		sse:           get(`tidegate_push_connections{kind="sse_subscriber"}`),
		published:     get("tidegate_push_published_events_total"),
		dropped:       get(`tidegate_push_writes_total{outcome="dropped"}`),
		notWritable:   get(`tidegate_push_subscriber_closes_total{reason="not_writable"}`),
		budgetDropped: int64(vals["tidegate_push_budget_dropped_events_total"]), // absent before the budget existed
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("pushload: %s/metrics lacks %s", m.Base, strings.Join(missing, ", "))
	}
	return s, nil
}
