package admin

import (
	"strings"
	"time"

	"github.com/tidegate/tidegate/session/proxy/config"
)

// The bodies of the admin API's answers and the data they are made of.

// BackendStatus is one backend's health, as Source.BackendHealth reports
// it (and /readyz shows it).
type BackendStatus struct {
	// Group is the name of the backend's group.
	Group string `json:"group"`
	// Addr is the backend's address as configured.
	Addr string `json:"addr"`
	// Up is true when sessions may be sent to the backend.
	Up bool `json:"up"`
	// Probing is true while one connect or probe decides whether a
	// backend whose cooldown has ended is back.
	Probing bool `json:"probing,omitempty"`
	// DownUntil is when the cooldown of a down backend ends; zero when up
	// or probing.
	DownUntil time.Time `json:"down_until,omitzero"`
	// Failures counts consecutive failed connects and probes.
	Failures int `json:"failures"`
	// Sessions is the number of sessions relayed to the backend now.
	Sessions int64 `json:"sessions"`
	// ConnectFailures counts session connects that failed or timed out.
	ConnectFailures int64 `json:"connect_failures"`
	// ProbesOK and ProbesFailed count active probes (checks_ok and
	// checks_failed in JSON, as before the rename).
	ProbesOK     int64 `json:"checks_ok"`
	ProbesFailed int64 `json:"checks_failed"`
	// Latency is the duration of the last successful active probe (connect,
	// and for status probes the status exchange), LatencyEWMA an
	// exponentially weighted average of them; both 0 before the first.
	Latency     time.Duration `json:"latency_ns"`
	LatencyEWMA time.Duration `json:"latency_ewma_ns"`
	// LastError is the last failed connect or probe, at LastErrorAt; it is
	// kept after the backend recovers.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// BackendsView is the body of /api/v1/backends.
type BackendsView struct {
	ConfigHash string `json:"config_hash"`
	// GroupsDown lists the groups some listener sends sessions to that
	// have no backend up (as /readyz does).
	GroupsDown []string        `json:"groups_down"`
	Backends   []BackendStatus `json:"backends"`
}

// RejectionsView is the body of /api/v1/rejections.
type RejectionsView struct {
	// Totals counts every refusal since the proxy started, by reason (as
	// tidegate_proxy_rejected_total).
	Totals map[string]int64 `json:"totals"`
	// Recent is the last refusals, newest first: each event loop keeps its
	// last KeptPerLoop.
	Recent          []Rejection `json:"recent"`
	KeptPerLoop     int         `json:"kept_per_loop"`
	LoopsUnanswered int         `json:"loops_unanswered"`
}

// ConfigResponse is the body of /api/v1/config.
type ConfigResponse struct {
	ConfigHash string `json:"config_hash"`
	config.View
}

// Rejection is one refusal of a session before it relayed.
type Rejection struct {
	At time.Time `json:"at"`
	// Remote is the client's address (the PROXY header's, if any).
	Remote string `json:"remote"`
	// Reason is the label of tidegate_proxy_rejected_total.
	Reason string `json:"reason"`
	// Host, User and Group are what the session had got to: empty for a
	// refusal at accept.
	Host  string `json:"host,omitempty"`
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
}

// SessionFilter selects sessions: each field that is set must match.
type SessionFilter struct {
	// Host is a virtual host, matched as routes match it (case and a
	// trailing dot do not matter); *.example.com matches every name under
	// example.com, at any depth.
	Host string
	// User is a username, matched without regard to case.
	User string
	// Group is a group name; Backend a backend address as configured.
	Group   string
	Backend string
	// Limit is how many matching sessions are listed; the counts cover
	// every match. 0 lists none.
	Limit int
}

// Matches reports whether a session with these fields passes f, whose
// Host is normalized (see SessionFilter.Normalized).
func (f *SessionFilter) Matches(host, user, group, backend string) bool {
	switch {
	case f.Host != "" && !hostMatches(f.Host, host):
		return false
	case f.User != "" && !strings.EqualFold(f.User, user):
		return false
	case f.Group != "" && f.Group != group:
		return false
	case f.Backend != "" && f.Backend != backend:
		return false
	}
	return true
}

// hostMatches reports whether host matches pattern, both normalized: the
// same name, or for *.suffix a name that ends in .suffix.
func hostMatches(pattern, host string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
		return len(host) > len(suffix)+1 && strings.HasSuffix(host, suffix) && host[len(host)-len(suffix)-1] == '.'
	}
	return pattern == host
}

// Normalized returns f with its host normalized as routes are.
func (f SessionFilter) Normalized() SessionFilter {
	f.Host = config.NormalizeHost(f.Host)
	return f
}

// SessionsSummary is what Source.Sessions found.
type SessionsSummary struct {
	// Open is the number of sessions the loops hold, matching or not.
	Open int `json:"open"`
	// Matched is the number that pass the filter; the counts below are of
	// those.
	Matched int `json:"matched"`
	// ByHost counts matching sessions per virtual host (raw sessions and
	// those that have not sent their handshake yet have host ""), most
	// first.
	ByHost []HostCount `json:"by_host"`
	// ByBackend counts matching sessions per backend they relay to or
	// connect to, most first.
	ByBackend []BackendCount `json:"by_backend"`
	// ByState counts matching sessions per state (see SessionInfo.State).
	ByState map[string]int `json:"by_state"`
	// Sessions lists at most the filter's limit of the matching sessions,
	// oldest first; Truncated says more matched. When it is truncated,
	// which sessions make the list is not specified beyond its order.
	Sessions  []SessionInfo `json:"sessions"`
	Truncated bool          `json:"truncated"`
	// LoopsUnanswered counts the event loops that did not answer in time:
	// their sessions are missing from every count.
	LoopsUnanswered int `json:"loops_unanswered"`
}

// HostCount is the number of sessions of one virtual host.
type HostCount struct {
	Host     string `json:"host"`
	Sessions int    `json:"sessions"`
}

// BackendCount is the number of sessions of one backend.
type BackendCount struct {
	Group    string `json:"group"`
	Backend  string `json:"backend"`
	Sessions int    `json:"sessions"`
}

// SessionInfo is one session as Source.Sessions lists it.
type SessionInfo struct {
	// Remote is the client's address (the PROXY header's, if any).
	Remote string `json:"remote"`
	// Listener is the listen address, as configured, that accepted it,
	// and Mode that listener's mode.
	Listener string      `json:"listener"`
	Mode     config.Mode `json:"mode"`
	Host     string      `json:"host,omitempty"`
	User     string      `json:"user,omitempty"`
	Protocol int32       `json:"protocol,omitempty"`
	Group    string      `json:"group,omitempty"`
	Backend  string      `json:"backend,omitempty"`
	// State is one of proxy_header, handshake, login, status,
	// legacy_ping, connecting, relay, closing, adopting, handed_over.
	State string `json:"state"`
	// Since is when the client connected (to the process it was handed
	// over from, for a session that came in a live upgrade).
	Since time.Time `json:"since,omitzero"`
}

// MaxSessionsListed bounds SessionFilter.Limit.
const MaxSessionsListed = 10000
