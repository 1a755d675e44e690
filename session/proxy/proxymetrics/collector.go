package proxymetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidegate/tidegate/session/cluster"
	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/bungeechan"
	"github.com/tidegate/tidegate/session/proxy/kick"
	"github.com/tidegate/tidegate/session/proxy/move"
)

// Source is the running proxy, as the collector reads it on each scrape.
// Each method may be called from any goroutine.
type Source interface {
	// Stats returns the proxy's counters.
	Stats() Stats
	// Reasons returns the labels of the reasons a session may be refused
	// for and of those a relaying session may be ended for; NewCollector
	// reads them once.
	Reasons() (refusals, ends []string)
	// BackendHealth returns the health of every backend.
	BackendHealth() []admin.BackendStatus
	// Reloads counts the configuration reloads that took effect and those
	// that failed.
	Reloads() (ok, failed int64)
	// ConfigHash returns the hash of the configuration new sessions use.
	ConfigHash() string
	// RateLimitAddresses returns how many rate buckets (addresses' and
	// subnets') are kept now, how many were dropped to bound them, and how
	// many takes went to a subnet's shared bucket as the subnet had its
	// cap of address buckets.
	RateLimitAddresses() (tracked, evicted, untracked int64)
	// Cluster returns the cluster client, nil when clustering is off.
	Cluster() *cluster.Client
}

// Collector exports the proxy's counters to Prometheus. It reads Stats and
// BackendHealth on each scrape, so the data path keeps its lock-free
// per-loop and per-backend counters.
type Collector struct {
	src                  Source
	refusals, endReasons []string // Source.Reasons, which do not change

	accepted, active, routed, connectFailed *prometheus.Desc
	bytes, frames, unframed, rejected, ends *prometheus.Desc
	paused, pauseEvents, lingerExpired      *prometheus.Desc
	moves                                   *prometheus.Desc
	kicks                                   *prometheus.Desc
	bungee                                  *prometheus.Desc

	backendUp, backendLatency, backendSessions, backendChecks *prometheus.Desc

	reloads, configInfo *prometheus.Desc

	statusAnswers, statusRefreshes *prometheus.Desc
	rateAddresses, rateEvictions   *prometheus.Desc
	rateUntracked                  *prometheus.Desc

	clusterUp, clusterFallbacks, clusterRoundTrips, clusterSessions *prometheus.Desc
	clusterNetSessions, clusterNetProxies, clusterConflicts         *prometheus.Desc
	clusterKicks                                                    *prometheus.Desc
}

// NewCollector returns a Prometheus collector for the proxy src.
func NewCollector(src Source) *Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("tidegate_proxy_"+name, help, labels, nil)
	}
	refusals, ends := src.Reasons()
	return &Collector{
		src:           src,
		refusals:      refusals,
		endReasons:    ends,
		accepted:      d("accepted_total", "Client connections accepted."),
		active:        d("sessions_active", "Sessions open now."),
		routed:        d("routed_total", "Sessions whose backend connected."),
		connectFailed: d("backend_connect_failures_total", "Backend connects of sessions that failed or timed out, by backend.", "group", "addr"),
		bytes:         d("bytes_total", "Bytes relayed, by direction.", "direction"),
		frames:        d("frames_total", "Minecraft frames relayed, by direction.", "direction"),
		unframed:      d("unframed_streams_total", "Streams whose framing could not be followed (encryption)."),
		rejected:      d("rejected_total", "Sessions refused before they relayed, by reason.", "reason"),
		ends:          d("session_ends_total", "Relaying sessions the proxy ended, by reason (idle_timeout, fin_timeout, shutdown at the drain deadline, logged_in_elsewhere, move_timeout, move_queue_full, move_lost, a re-framed session's inflate_too_large, bad_compression, reframe_too_large, an inspected session's bad_backend_frame).", "reason"),
		bungee:        d("bungee_messages_total", "Messages backends sent on the BungeeCord plugin channel, by outcome (answered; acted: a move, chat or kick asked; unanswered: about no such server or player; failed; refused: Forward; malformed; unknown_subchannel).", "outcome"),
		kicks:         d("kicks_total", "Backends' kicks (Disconnect) of players on a group with a fallback, by outcome (moved to a fallback; none_took: no fallback took them and the client got the kick; hop_limit: too many kicks in a row; unreadable_reason: counted as well, the kick's reason did not decode).", "outcome"),
		moves:         d("moves_total", "Moves of players between servers, by outcome (moved; before the switch, the player staying: unreachable, refused, timeout, failed; lost after it, also counted in session_ends_total).", "outcome"),
		paused:        d("paused_connections", "Connections not being read now (flow control)."),
		pauseEvents:   d("pause_events_total", "Times a connection stopped being read."),
		lingerExpired: d("linger_expired_total", "Closes reset because output was still queued at the linger deadline."),

		backendUp:       d("backend_up", "1 when the backend may get sessions, 0 while it is down or being probed.", "group", "addr"),
		backendLatency:  d("backend_check_latency_seconds", "Duration of the backend's last successful active check.", "group", "addr"),
		backendSessions: d("backend_sessions", "Sessions relayed to the backend now.", "group", "addr"),
		backendChecks:   d("backend_checks_total", "Active health checks of the backend, by result (ok, failed).", "group", "addr", "result"),

		statusAnswers:   d("status_cached_answers_total", "Status pings answered from a group's cached status, by when (at once, or after waiting for a refresh).", "when"),
		statusRefreshes: d("status_refreshes_total", "Fetches of a group's status from its backends, by result (ok, failed).", "result"),

		reloads:    prometheus.NewDesc("tidegate_config_reloads_total", "Configuration reloads, by result (ok, failed).", []string{"result"}, nil),
		configInfo: prometheus.NewDesc("tidegate_config_info", "1, labelled with the hash of the configuration new sessions use.", []string{"hash"}, nil),

		rateAddresses: d("rate_limit_addresses", "Client addresses whose connection or login buckets are tracked now (limits.rate_limit_addresses bounds them)."),
		rateEvictions: d("rate_limit_evictions_total", "Buckets not yet refilled dropped to keep the table within limits.rate_limit_addresses."),
		rateUntracked: d("rate_limit_untracked_total", "Connections and logins of addresses limited by their subnet's shared bucket, the subnet holding limits.rate_limit_per_subnet address buckets already."),

		clusterUp:          cd("up", "1 while Redis answers the cluster client, 0 while its circuit breaker is open (logins are decided locally)."),
		clusterFallbacks:   cd("fallbacks_total", "Redis calls not made (breaker open, queue full) or failed, whose outcome this proxy's own state decided, by operation.", "op"),
		clusterRoundTrips:  cd("redis_roundtrips_total", "Round trips to Redis (one per command or pipeline)."),
		clusterSessions:    cd("sessions", "Sessions of this proxy in the cluster client's registry (published, or waiting to be)."),
		clusterNetSessions: cd("network_sessions", "Sessions of every live proxy, as the last heartbeat read them (absent while Redis does not answer)."),
		clusterNetProxies:  cd("network_proxies", "Live proxies of the network, as the last heartbeat read them (absent while Redis does not answer)."),
		clusterConflicts:   cd("conflicts_total", "Sessions let in while Redis was away whose name or UUID another proxy's session held when they were republished."),
		clusterKicks:       cd("kicks_total", "Sessions of this proxy closed because the player logged in again (cluster.duplicate_login: kick_old)."),
	}
}

// cd describes a cluster metric.
func cd(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("tidegate_cluster_"+name, help, labels, nil)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.accepted, c.active, c.routed, c.connectFailed, c.bytes, c.frames,
		c.unframed, c.rejected, c.ends, c.moves, c.kicks, c.bungee, c.paused, c.pauseEvents, c.lingerExpired,
		c.backendUp, c.backendLatency, c.backendSessions, c.backendChecks, c.reloads, c.configInfo,
		c.statusAnswers, c.statusRefreshes, c.rateAddresses, c.rateEvictions, c.rateUntracked,
		c.clusterUp, c.clusterFallbacks, c.clusterRoundTrips, c.clusterSessions, c.clusterNetSessions, c.clusterNetProxies,
		c.clusterConflicts, c.clusterKicks} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Stats()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	counter(c.accepted, st.Accepted)
	gauge(c.active, st.Active)
	counter(c.routed, st.Routed)
	counter(c.bytes, st.BytesC2S, "client_to_backend")
	counter(c.bytes, st.BytesS2C, "backend_to_client")
	counter(c.frames, st.FramesC2S, "client_to_backend")
	counter(c.frames, st.FramesS2C, "backend_to_client")
	counter(c.unframed, st.Unframed)
	for _, r := range c.refusals {
		counter(c.rejected, st.Rejected[r], r)
	}
	for _, r := range c.endReasons {
		counter(c.ends, st.Ended[r], r)
	}
	for o := range move.Outcomes {
		counter(c.moves, st.Moves[o.String()], o.String())
	}
	for o := range kick.Outcomes {
		counter(c.kicks, st.Kicks[o.String()], o.String())
	}
	for o := range bungeechan.Outcomes {
		counter(c.bungee, st.Bungee[o.String()], o.String())
	}
	gauge(c.paused, st.Reactor.Paused)
	counter(c.pauseEvents, st.Reactor.PauseEvents)
	counter(c.lingerExpired, st.Reactor.LingerExpired)
	counter(c.statusAnswers, st.StatusCached, "at_once")
	counter(c.statusAnswers, st.StatusWaited, "after_refresh")
	counter(c.statusRefreshes, st.StatusRefreshes, "ok")
	counter(c.statusRefreshes, st.StatusRefreshFailures, "failed")
	ok, failed := c.src.Reloads()
	counter(c.reloads, ok, "ok")
	counter(c.reloads, failed, "failed")
	gauge(c.configInfo, 1, c.src.ConfigHash())
	tracked, evicted, untracked := c.src.RateLimitAddresses()
	gauge(c.rateAddresses, tracked)
	counter(c.rateEvictions, evicted)
	counter(c.rateUntracked, untracked)
	if cl := c.src.Cluster(); cl != nil {
		up := int64(0)
		if cl.Up() {
			up = 1
		}
		gauge(c.clusterUp, up)
		fb := cl.Fallbacks()
		for _, op := range cluster.Ops {
			counter(c.clusterFallbacks, fb[op], op)
		}
		counter(c.clusterRoundTrips, cl.RoundTrips())
		gauge(c.clusterSessions, int64(cl.Sessions()))
		counter(c.clusterConflicts, cl.Conflicts())
		counter(c.clusterKicks, cl.Kicks())
		if n, ok := cl.Network(); ok {
			gauge(c.clusterNetSessions, int64(n.Online))
			gauge(c.clusterNetProxies, int64(n.Proxies))
		}
	}
	for _, b := range c.src.BackendHealth() {
		up := int64(0)
		if b.Up {
			up = 1
		}
		gauge(c.backendUp, up, b.Group, b.Addr)
		gauge(c.backendSessions, b.Sessions, b.Group, b.Addr)
		counter(c.connectFailed, b.ConnectFailures, b.Group, b.Addr)
		counter(c.backendChecks, b.ProbesOK, b.Group, b.Addr, "ok")
		counter(c.backendChecks, b.ProbesFailed, b.Group, b.Addr, "failed")
		if b.Latency > 0 {
			ch <- prometheus.MustNewConstMetric(c.backendLatency, prometheus.GaugeValue, b.Latency.Seconds(), b.Group, b.Addr)
		}
	}
}
