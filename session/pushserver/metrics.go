package pushserver

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the push server's counters to Prometheus, reading
// Stats on each scrape (names after Mantis' push metrics).
type Collector struct {
	s *Server

	conns, frames, events, unrouted, handoffs, pauses *prometheus.Desc
	rejects, refusals, writes, batches, batchEvents   *prometheus.Desc
	batchSizes, heartbeats, closes                    *prometheus.Desc
	budgetDropped, queued, budget, topics             *prometheus.Desc
}

// NewCollector returns a Prometheus collector for s.
func NewCollector(s *Server) *Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("tidegate_push_"+name, help, labels, nil)
	}
	return &Collector{
		s:           s,
		conns:       d("connections", "Connections open now, by kind.", "kind"),
		frames:      d("publish_frames_total", "Publish frames accepted."),
		events:      d("published_events_total", "Events published."),
		unrouted:    d("unrouted_events_total", "Events published to a topic nobody subscribes to."),
		handoffs:    d("handoffs_total", "Hand-offs run on subscriber loops."),
		pauses:      d("publisher_pauses_total", "Times a publisher stopped being read."),
		rejects:     d("publisher_rejects_total", "Publish frames refused, by reason.", "reason"),
		refusals:    d("subscribe_refusals_total", "Subscribe requests refused, by reason.", "reason"),
		writes:      d("writes_total", "Events due to subscribers, by outcome (processed, successful, failed, dropped).", "outcome"),
		batches:     d("batches_total", "Batches written."),
		batchEvents: d("batch_events_total", "Events in written batches."),
		batchSizes:  d("batches_by_size_total", "Batches written, by events per batch (bucket \"lo-hi\", not cumulative).", "events"),
		heartbeats:  d("heartbeats_total", "Heartbeats written."),
		closes:      d("subscriber_closes_total", "Subscribers closed by the server, by reason (read_idle; not_writable: for the not-writable timeout).", "reason"),
		// The buffer budget and the registry.
		budgetDropped: d("budget_dropped_events_total", "Dropped events (part of writes_total{outcome=\"dropped\"}) that the buffer budget cut."),
		queued:        d("queued_bytes", "Output queued for subscribers now, as the buffer budget counts it."),
		budget:        d("buffer_budget_bytes", "The buffer budget: the most output queued for all subscribers together (0: none)."),
		topics:        d("topics", "Topics in the registry now (topics with subscribers)."),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.conns, c.frames, c.events, c.unrouted, c.handoffs, c.pauses,
		c.rejects, c.refusals, c.writes, c.batches, c.batchEvents, c.batchSizes, c.heartbeats, c.closes,
		c.budgetDropped, c.queued, c.budget, c.topics} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	gauge(c.conns, st.Publishers, "publisher")
	gauge(c.conns, st.TCPSubscribers, "tcp_subscriber")
	gauge(c.conns, st.SSESubscribers, "sse_subscriber")
	gauge(c.conns, st.Pending, "pending")
	counter(c.frames, st.PublishFrames)
	counter(c.events, st.PublishedEvents)
	counter(c.unrouted, st.UnroutedEvents)
	counter(c.handoffs, st.Handoffs)
	counter(c.pauses, st.PublisherPauses)
	for r, n := range st.Rejects {
		counter(c.rejects, n, r)
	}
	for r, n := range st.Refusals {
		counter(c.refusals, n, r)
	}
	counter(c.writes, st.ProcessedWrites, "processed")
	counter(c.writes, st.SuccessfulWrites, "successful")
	counter(c.writes, st.FailedWrites, "failed")
	counter(c.writes, st.Dropped, "dropped")
	counter(c.batches, st.Batches)
	counter(c.batchEvents, st.BatchEvents)
	for i := 1; i < len(st.BatchSizes); i++ {
		bucket := strconv.Itoa(1<<(i-1)) + "-"
		if i < len(st.BatchSizes)-1 {
			bucket += strconv.Itoa(1<<i - 1)
		}
		counter(c.batchSizes, st.BatchSizes[i], bucket)
	}
	counter(c.heartbeats, st.Heartbeats)
	counter(c.closes, st.ReadIdleCloses, "read_idle")
	counter(c.closes, st.StuckCloses, "not_writable")
	counter(c.budgetDropped, st.BudgetDropped)
	gauge(c.queued, st.QueuedBytes)
	gauge(c.budget, int64(c.s.cfg.BufferBudget))
	gauge(c.topics, st.Topics)
}
