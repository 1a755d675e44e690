package proxy

import (
	"sync/atomic"

	"github.com/tidegate/tidegate/reactor"
)

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
}

func (r reason) String() string { return reasonLabels[r] }

// endReasons are the reasons a relaying session is ended for.
var endReasons = []reason{reasonIdleTimeout, reasonFinTimeout, reasonShutdown, reasonLoggedInElsewhere}

// onlyEnds reports whether r never refuses a session, only ends one.
func (r reason) onlyEnds() bool { return r == reasonIdleTimeout || r == reasonFinTimeout }

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

// Stats are the proxy's counters, summed over loops.
type Stats struct {
	Reactor       reactor.Stats
	Accepted      int64            // client connections accepted
	Active        int64            // sessions open now
	Routed        int64            // sessions whose backend connected
	ConnectFailed int64            // backend connects that failed or timed out
	BytesC2S      int64            // bytes relayed client to backend
	BytesS2C      int64            // bytes relayed backend to client
	FramesC2S     int64            // Minecraft frames relayed client to backend
	FramesS2C     int64            // Minecraft frames relayed backend to client
	Unframed      int64            // streams whose framing could not be followed (encryption)
	Rejected      map[string]int64 // sessions refused before they relayed, by reason
	Ended         map[string]int64 // relaying sessions the proxy ended (idle_timeout, fin_timeout, shutdown)

	// StatusCached and StatusWaited count the status pings (modern and
	// legacy) answered from a group's cache, at once or after waiting for
	// a refresh; StatusRefreshes and StatusRefreshFailures count the
	// refreshes that fetched a status and those that failed.
	StatusCached          int64
	StatusWaited          int64
	StatusRefreshes       int64
	StatusRefreshFailures int64

	// HandedOver counts the sessions this process gave to another (a live
	// upgrade), and HandedOverQueued the bytes it had relayed for them but
	// not yet sent, which went with them.
	HandedOver       int64
	HandedOverQueued int64
}
