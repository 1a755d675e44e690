// Package metrics exports the reactor's accept path, liveness, resets and
// the process's descriptor budget to Prometheus, read from what the servers
// report (Server.Health, Server.Stats) and from the budget (fdbudget).
package metrics

import (
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/acceptor"
	"github.com/tidegate/tidegate/reactor/bufferbudget"
	"github.com/tidegate/tidegate/reactor/fdbudget"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the accept path and liveness of one or more servers to
// Prometheus, labelled by server name, and the process's descriptor and
// buffer budgets.
// A process registers one Collector for all its servers.
type Collector struct {
	names   []string
	servers []*reactor.Server

	engineUp, listenerUp, acceptPaused, acceptPauses *prometheus.Desc
	acceptErrors, acceptedOpen, fdLimit, fdAccounted *prometheus.Desc
	resets, resetQueued, halfClosed                  *prometheus.Desc
	queued, budget, paused, pauseEvents              *prometheus.Desc
	heldInput, gnetWorkers                           *prometheus.Desc
}

// NewCollector returns a collector for servers, keyed by the name each is
// exported under (such as "proxy", "publish", "subscribe").
func NewCollector(servers map[string]*reactor.Server) *Collector {
	c := &Collector{
		engineUp:     prometheus.NewDesc("tidegate_engine_up", "1 while the server's event loops run.", []string{"server"}, nil),
		listenerUp:   prometheus.NewDesc("tidegate_listener_up", "1 while the listener's accept goroutine runs (paused counts as up).", []string{"server", "listen"}, nil),
		acceptPaused: prometheus.NewDesc("tidegate_accept_paused", "1 while the listener leaves new connections in the backlog, by reason.", []string{"server", "listen", "reason"}, nil),
		acceptPauses: prometheus.NewDesc("tidegate_accept_pauses_total", "Times accepting paused at a limit (max connections or descriptor budget).", []string{"server"}, nil),
		acceptErrors: prometheus.NewDesc("tidegate_accept_errors_total", "Accept errors, by errno; accepting goes on after each.", []string{"server", "errno"}, nil),
		acceptedOpen: prometheus.NewDesc("tidegate_accepted_connections", "Accepted connections open now.", []string{"server"}, nil),
		fdLimit:      prometheus.NewDesc("tidegate_fd_limit", "The process's descriptor limit (soft RLIMIT_NOFILE).", nil, nil),
		fdAccounted:  prometheus.NewDesc("tidegate_fd_accounted", "Descriptors the admission budget counts as used.", nil, nil),
		resets: prometheus.NewDesc("tidegate_reset_closes_total",
			"Connections reset (not closed with a FIN) because output was still queued: cause linger (the linger expired) or abort.",
			[]string{"server", "cause"}, nil),
		resetQueued: prometheus.NewDesc("tidegate_reset_queued_bytes_total",
			"Output still queued in user space at those resets (for abort, before the close's last write attempt): about what the peer never got.", []string{"server", "cause"}, nil),
		halfClosed: prometheus.NewDesc("tidegate_half_closed_total",
			"Connections whose peer shut down its write side and that were kept open for writing.", []string{"server"}, nil),
		// One set of names for the buffer budget in every command.
		queued: prometheus.NewDesc("tidegate_buffer_queued_bytes",
			"Output queued in user space in the whole process, all servers, as the buffer budget counts it.", nil, nil),
		heldInput: prometheus.NewDesc("tidegate_buffer_held_input_bytes",
			"Unread input held in the whole process by connections not yet relaying (a proxy's before routing), as the buffer budget counts it with the queued output.", nil, nil),
		gnetWorkers: prometheus.NewDesc("tidegate_gnet_workers",
			"Goroutines of gnet's worker pool alive now: one runs each registration (an accepted connection's hand-over to a loop, a backend dial) and waits for its loop, then stays idle up to 10 s.", nil, nil),
		budget: prometheus.NewDesc("tidegate_buffer_budget_bytes",
			"The server's buffer budget: past this much output queued in the process, its producers holding more than 16 KiB stop being read (0: none).", []string{"server"}, nil),
		paused: prometheus.NewDesc("tidegate_paused_connections",
			"Connections not being read now by flow control: the output they produce into is past the high watermark or the buffer budget.", []string{"server"}, nil),
		pauseEvents: prometheus.NewDesc("tidegate_pause_events_total",
			"Times a connection stopped being read by flow control.", []string{"server"}, nil),
	}
	for name, s := range servers {
		c.names = append(c.names, name)
		c.servers = append(c.servers, s)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.engineUp, c.listenerUp, c.acceptPaused, c.acceptPauses,
		c.acceptErrors, c.acceptedOpen, c.fdLimit, c.fdAccounted, c.resets, c.resetQueued, c.halfClosed,
		c.queued, c.heldInput, c.gnetWorkers, c.budget, c.paused, c.pauseEvents} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	pauses := acceptor.PauseStates()
	for i, s := range c.servers {
		name := c.names[i]
		h := s.Health()
		ch <- prometheus.MustNewConstMetric(c.engineUp, prometheus.GaugeValue, b(h.Running), name)
		for _, l := range h.Listeners {
			ch <- prometheus.MustNewConstMetric(c.listenerUp, prometheus.GaugeValue, b(l.Alive), name, l.Addr)
			for _, reason := range pauses {
				ch <- prometheus.MustNewConstMetric(c.acceptPaused, prometheus.GaugeValue, b(l.State == reason), name, l.Addr, reason)
			}
		}
		st := s.Stats()
		ch <- prometheus.MustNewConstMetric(c.acceptPauses, prometheus.CounterValue, float64(st.AcceptPauses), name)
		for errno, n := range st.AcceptErrors {
			ch <- prometheus.MustNewConstMetric(c.acceptErrors, prometheus.CounterValue, float64(n), name, errno)
		}
		ch <- prometheus.MustNewConstMetric(c.acceptedOpen, prometheus.GaugeValue, float64(s.AcceptedOpen()), name)
		ch <- prometheus.MustNewConstMetric(c.resets, prometheus.CounterValue, float64(st.LingerExpired), name, "linger")
		ch <- prometheus.MustNewConstMetric(c.resets, prometheus.CounterValue, float64(st.AbortResets), name, "abort")
		ch <- prometheus.MustNewConstMetric(c.resetQueued, prometheus.CounterValue, float64(st.LingerQueuedBytes), name, "linger")
		ch <- prometheus.MustNewConstMetric(c.resetQueued, prometheus.CounterValue, float64(st.AbortQueuedBytes), name, "abort")
		ch <- prometheus.MustNewConstMetric(c.halfClosed, prometheus.CounterValue, float64(st.HalfClosed), name)
		ch <- prometheus.MustNewConstMetric(c.budget, prometheus.GaugeValue, float64(s.Config().BufferBudget), name)
		ch <- prometheus.MustNewConstMetric(c.paused, prometheus.GaugeValue, float64(st.Paused), name)
		ch <- prometheus.MustNewConstMetric(c.pauseEvents, prometheus.CounterValue, float64(st.PauseEvents), name)
	}
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(bufferbudget.Queued()))
	ch <- prometheus.MustNewConstMetric(c.heldInput, prometheus.GaugeValue, float64(bufferbudget.Held()))
	ch <- prometheus.MustNewConstMetric(c.fdLimit, prometheus.GaugeValue, float64(fdbudget.Limit()))
	ch <- prometheus.MustNewConstMetric(c.fdAccounted, prometheus.GaugeValue, float64(fdbudget.Accounted()))
	ch <- prometheus.MustNewConstMetric(c.gnetWorkers, prometheus.GaugeValue, float64(reactor.GnetWorkers()))
}
