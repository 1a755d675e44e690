package lifecycle

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/fdbudget"
)

// The metrics listener's limits, so that whoever reaches its address cannot
// hold the descriptors or the memory the proxy needs: a connection that
// sends nothing, sends slowly, reads slowly or stays idle is closed within
// these, and at most DefaultMetricsMaxConns are open at once.
const (
	// DefaultMetricsMaxConns is how many connections the metrics listener
	// holds at once unless MetricsOptions.MaxConns says otherwise: a
	// Prometheus or two, probes, an operator's curl and a profile leave
	// room to spare, and 64 descriptors are the half of the proxy's
	// reserve (reactor.DefaultFDReserve) they may take (metricsReserve).
	DefaultMetricsMaxConns = 64
	// metricsReadHeaderTimeout bounds reading a request's header.
	metricsReadHeaderTimeout = 5 * time.Second
	// metricsReadTimeout bounds reading a whole request; none of the
	// metrics listener's requests has a body worth more.
	metricsReadTimeout = 10 * time.Second
	// metricsWriteTimeout bounds a response from the end of its request's
	// header; a profile's or trace's own deadline is this plus the
	// seconds it was asked for (net/http/pprof extends it).
	metricsWriteTimeout = 30 * time.Second
	// metricsIdleTimeout closes a keep-alive connection idle this long:
	// Prometheus scrapes every 15 s to 1 min and reconnects at no cost.
	metricsIdleTimeout = 30 * time.Second
	// metricsMaxHeaderBytes caps a request's header; the listener's
	// requests are short URLs with a few headers.
	metricsMaxHeaderBytes = 16 << 10
)

// capListener is the metrics listener with a cap on the connections it
// holds and each one's descriptor accounted in the process's descriptor
// budget (fdbudget), which the proxy's admission reads. At the cap it stops
// calling accept, so that further connections wait in the kernel's backlog,
// which costs no descriptor, and are served as earlier ones close (every
// one does within the timeouts); a scrape then waits instead of failing. A
// connection accepted when its descriptor would take more than the half of
// the proxy's reserve it may use (metricsReserve) is closed at once: that
// descriptor is the proxy's.
type capListener struct {
	net.Listener
	slots   chan struct{} // one token per connection held
	reserve int           // descriptors the budget keeps free for the proxy
	closed  chan struct{}
	once    sync.Once
	open    atomic.Int64 // connections held now
	refused atomic.Int64 // connections closed for want of descriptors
}

// newCapListener is a capListener that holds at most maxConns connections
// at once, never taking the last reserve descriptors of the budget; it
// serves the listener its Listener field is set to.
func newCapListener(maxConns, reserve int) *capListener {
	return &capListener{slots: make(chan struct{}, maxConns), reserve: reserve, closed: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection that fits in the
// descriptor budget.
func (l *capListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.slots
			return nil, err
		}
		// The accepted descriptor is open already; it stays only if the
		// budget has room for it beside what it leaves of the proxy's reserve.
		if !fdbudget.Room(1, l.reserve) {
			l.refused.Add(1)
			_ = c.Close()
			continue
		}
		fdbudget.Hold(1)
		l.open.Add(1)
		return &cappedConn{Conn: c, l: l}, nil
	}
}

// Close closes the listener and wakes an Accept waiting for a slot.
func (l *capListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// cappedConn is a connection held by a capListener: closing it frees its
// slot and its descriptor in the budget, once.
type cappedConn struct {
	net.Conn
	l    *capListener
	once sync.Once
}

// Close closes the connection and gives its slot and descriptor back.
func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		fdbudget.Hold(-1)
		c.l.open.Add(-1)
		<-c.l.slots
	})
	return err
}

// metricsReserve is the descriptor reserve the metrics listener leaves to
// the proxy: half the reactor's (which no command configures otherwise),
// as a hand-over leaves (reactor.Server.HandoverFDs). The reactor's reserve
// is kept for listeners, dials, metrics and logs, and a server stops
// accepting before it touches it, so the metrics listener may take the
// other half: a scrape then still answers while accepting is paused at the
// descriptor budget, when an operator most needs to see the budget
// (before, every scrape was refused then: the soak's "connection reset by
// peer", benchmarks/results/2026-12-02-soak-hour.md). Its cap,
// DefaultMetricsMaxConns, fits in that half.
const metricsReserve = reactor.DefaultFDReserve / 2

// collector exports the listener's connections held and refused.
func (l *capListener) collector() prometheus.Collector {
	return collectorList{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tidegate_metrics_connections",
			Help: "Connections the metrics listener holds now (at most its cap; each counted in the descriptor budget)."},
			func() float64 { return float64(l.open.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tidegate_metrics_connections_refused_total",
			Help: "Metrics connections closed at once because their descriptor would take more than half the proxy's reserve."},
			func() float64 { return float64(l.refused.Load()) }),
	}
}

// collectorList is several collectors registered as one.
type collectorList []prometheus.Collector

// Describe implements prometheus.Collector.
func (cs collectorList) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (cs collectorList) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}
