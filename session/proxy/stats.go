package proxy

import "sync/atomic"

// reason is why a session was refused or ended early.
type reason uint8

// Reasons, counted per loop and logged with the label of reasonLabels. A
// refusal (before the session relays) is counted in rejected, an end of a
// relaying session in ended: idle_timeout and fin_timeout are only ends,
// shutdown is either, by the state the drain deadline found the session in.
const (
	reasonMaxSessionsPerIP reason = iota
	reasonHandshakeTimeout
	reasonLegacyPing
	reasonBadFrame
	reasonBadHandshake
	reasonBadLoginStart
	reasonPrerouteCap
	reasonUnknownHost
	reasonBackendUnavailable
	reasonIdleTimeout
	reasonFinTimeout
	reasonShutdown
	reasonNoHealthyBackend
	reasonProxyProtocolUntrusted
	reasonBadProxyProtocol
	reasonConnectionRate
	reasonLoginRate
	reasonMaxSessionsPerSubnet
	reasonDuplicateLogin
	reasonLoggedInElsewhere
	reasonBadUsername
	reasonConnectionRateSubnet
	reasonLoginRateSubnet
	reasonBufferBudget
	reasonBackendLogin // a login the proxy completes failed on the backend's side (terminate.go)
	numReasons
)

var reasonLabels = [numReasons]string{
	reasonMaxSessionsPerIP:   "max_sessions_per_ip",
	reasonHandshakeTimeout:   "handshake_timeout",
	reasonLegacyPing:         "legacy_ping",
	reasonBadFrame:           "bad_frame",
	reasonBadHandshake:       "bad_handshake",
	reasonBadLoginStart:      "bad_login_start",
	reasonPrerouteCap:        "preroute_cap",
	reasonUnknownHost:        "unknown_host",
	reasonBackendUnavailable: "backend_unavailable",
	reasonIdleTimeout:        "idle_timeout",
	reasonFinTimeout:         "fin_timeout",
	reasonShutdown:           "shutdown",
	reasonNoHealthyBackend:   "no_healthy_backend",

	reasonProxyProtocolUntrusted: "proxy_protocol_untrusted",
	reasonBadProxyProtocol:       "bad_proxy_protocol",
	reasonConnectionRate:         "connection_rate",
	reasonLoginRate:              "login_rate",
	reasonMaxSessionsPerSubnet:   "max_sessions_per_subnet",
	reasonDuplicateLogin:         "duplicate_login",
	reasonLoggedInElsewhere:      "logged_in_elsewhere",
	reasonBadUsername:            "bad_username",
	reasonConnectionRateSubnet:   "connection_rate_subnet",
	reasonLoginRateSubnet:        "login_rate_subnet",
	reasonBufferBudget:           "buffer_budget",
	reasonBackendLogin:           "backend_login",
}

func (r reason) String() string { return reasonLabels[r] }

// endReasons are the reasons a relaying session is ended for.
var endReasons = []reason{reasonIdleTimeout, reasonFinTimeout, reasonShutdown, reasonLoggedInElsewhere}

// onlyEnds reports whether r never refuses a session, only ends one.
func (r reason) onlyEnds() bool { return r == reasonIdleTimeout || r == reasonFinTimeout }

// Reasons returns the labels of the reasons a session may be refused for
// (every reason but the end-only ones) and of those a relaying session may
// be ended for, the keys Stats' Rejected and Ended may have.
func (p *Proxy) Reasons() (refusals, ends []string) {
	for r := reason(0); r < numReasons; r++ {
		if !r.onlyEnds() {
			refusals = append(refusals, r.String())
		}
	}
	for _, r := range endReasons {
		ends = append(ends, r.String())
	}
	return refusals, ends
}

// loopCounters are one loop's counters: written only on that loop, read
// atomically by Stats. Padded so loops do not share cache lines.
type loopCounters struct {
	accepted      atomic.Int64
	active        atomic.Int64
	routed        atomic.Int64
	connectFailed atomic.Int64
	bytesC2S      atomic.Int64
	bytesS2C      atomic.Int64
	framesC2S     atomic.Int64
	framesS2C     atomic.Int64
	unframed      atomic.Int64
	statusCached  atomic.Int64             // status pings answered from a fresh cache entry
	statusWaited  atomic.Int64             // status pings answered after waiting for a refresh
	rejected      [numReasons]atomic.Int64 // sessions refused before they relayed
	ended         [numReasons]atomic.Int64 // relaying sessions the proxy ended
	_             [64]byte
}
