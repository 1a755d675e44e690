package proxy

import (
	"sync/atomic"

	"github.com/tidegate/tidegate/reactor"
)

// reason is why a session was refused or ended early.
type reason uint8

// Reasons, counted per loop and logged with the label of reasonLabels.
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
	reasonConnectionRate
	reasonLoginRate
	reasonMaxSessionsPerSubnet
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

	reasonConnectionRate:       "connection_rate",
	reasonLoginRate:            "login_rate",
	reasonMaxSessionsPerSubnet: "max_sessions_per_subnet",
}

func (r reason) String() string { return reasonLabels[r] }

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
	rejected      [numReasons]atomic.Int64
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
	Rejected      map[string]int64 // sessions refused or ended early, by reason
}
