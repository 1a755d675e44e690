package tlvserver

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the TLV server's counters to Prometheus, reading Stats
// on each scrape.
type Collector struct {
	s *Server

	requests, bytesIn, closes, badFrames        *prometheus.Desc
	accepted, active, paused, pauses, lingerExp *prometheus.Desc
}

// NewCollector returns a Prometheus collector for s.
func NewCollector(s *Server) *Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("tidegate_tlv_"+name, help, labels, nil)
	}
	return &Collector{
		s:         s,
		requests:  d("requests_total", "Requests answered."),
		bytesIn:   d("request_bytes_total", "Request bytes consumed, headers included."),
		closes:    d("closes_total", "Connections the server closed, by reason (keep_alive: a request without the keep-alive bit; idle_timeout; unframable_response: the handler answered with a response the format cannot carry).", "reason"),
		badFrames: d("bad_frames_total", "Bad frames answered with an error frame and a close, by reason.", "reason"),
		accepted:  d("accepted_total", "Connections accepted."),
		active:    d("connections", "Connections open now."),
		paused:    d("paused_connections", "Connections not being read now (flow control)."),
		pauses:    d("pause_events_total", "Times a connection stopped being read."),
		lingerExp: d("linger_expired_total", "Closes that dropped queued output after the linger deadline."),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.requests, c.bytesIn, c.closes, c.badFrames,
		c.accepted, c.active, c.paused, c.pauses, c.lingerExp} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter(c.requests, st.Requests)
	counter(c.bytesIn, st.BytesIn)
	counter(c.closes, st.KeepAliveClose, "keep_alive")
	counter(c.closes, st.IdleClose, "idle_timeout")
	counter(c.closes, st.UnframableClose, "unframable_response")
	for reason, n := range st.BadFrames {
		counter(c.badFrames, n, reason)
	}
	counter(c.accepted, st.Reactor.Accepted)
	gauge(c.active, st.Reactor.Active)
	gauge(c.paused, st.Reactor.Paused)
	counter(c.pauses, st.Reactor.PauseEvents)
	counter(c.lingerExp, st.Reactor.LingerExpired)
}
