// Package reasons names why the proxy refuses a session before it relays,
// or ends one that relays: each reason is a counter label, a log field and,
// for a player, the text of the disconnect.
package reasons

import (
	"sync/atomic"

	"github.com/tidegate/tidegate/session/proxy/config"
)

// Reason is why a session was refused or ended early.
type Reason uint8

// Reasons, counted per loop and logged with the label String gives. A
// refusal (before the session relays) is counted in rejected, an end of a
// relaying session in ended: idle_timeout and fin_timeout are only ends,
// shutdown is either, by the state the drain deadline found the session in.
const (
	MaxSessionsPerIP Reason = iota
	HandshakeTimeout
	LegacyPing
	BadFrame
	BadHandshake
	BadLoginStart
	PrerouteCap
	UnknownHost
	BackendUnavailable
	IdleTimeout
	FinTimeout
	Shutdown
	NoHealthyBackend
	ProxyProtocolUntrusted
	BadProxyProtocol
	ConnectionRate
	LoginRate
	MaxSessionsPerSubnet
	DuplicateLogin
	LoggedInElsewhere
	BadUsername
	ConnectionRateSubnet
	LoginRateSubnet
	BufferBudget
	BackendLogin // a login the proxy completes failed on the backend's side (terminate.go)
	// Online-mode logins (login: online): the client's Encryption Response
	// was bad (malformed, wrong verify token, bad secret), the session
	// server refused the player, or it failed (error, timeout, full queue);
	// a client that did not answer the Encryption Request in time, or
	// that closed the connection after it, before the verdict.
	AuthBadResponse
	AuthRefused
	AuthUnavailable
	EncryptionTimeout
	EncryptionAbandoned
	// A move between servers (session/proxy/move) that failed after the
	// client was told to reconfigure, so that it cannot stay where it was:
	// it did not acknowledge in time, sent more than the move holds, or the
	// new backend was lost.
	MoveTimeout
	MoveQueueFull
	MoveLost
	// A re-framed session (the client told another compression threshold
	// than the backend's: session/proxy/reframe) ended by a frame that
	// declares or inflates past the protocol's limit, a malformed
	// compressed frame, or a packet the other side's framing cannot hold.
	InflateTooLarge
	BadCompression
	ReframeTooLarge
	// A client that sent, before its Login Success at a login the proxy
	// completes, anything but an answer to a login plugin request relayed
	// to it (session/proxy/login/plugin.go).
	BadLoginPacket
	// A session whose backend's packets are inspected (a fallback is
	// configured: session/proxy/inspect) ended by a backend frame past the
	// protocol's frame limit or whose compression does not read.
	BadBackendFrame
	Count
)

var labels = [Count]string{
	MaxSessionsPerIP:   "max_sessions_per_ip",
	HandshakeTimeout:   "handshake_timeout",
	LegacyPing:         "legacy_ping",
	BadFrame:           "bad_frame",
	BadHandshake:       "bad_handshake",
	BadLoginStart:      "bad_login_start",
	PrerouteCap:        "preroute_cap",
	UnknownHost:        "unknown_host",
	BackendUnavailable: "backend_unavailable",
	IdleTimeout:        "idle_timeout",
	FinTimeout:         "fin_timeout",
	Shutdown:           "shutdown",
	NoHealthyBackend:   "no_healthy_backend",

	ProxyProtocolUntrusted: "proxy_protocol_untrusted",
	BadProxyProtocol:       "bad_proxy_protocol",
	ConnectionRate:         "connection_rate",
	LoginRate:              "login_rate",
	MaxSessionsPerSubnet:   "max_sessions_per_subnet",
	DuplicateLogin:         "duplicate_login",
	LoggedInElsewhere:      "logged_in_elsewhere",
	BadUsername:            "bad_username",
	ConnectionRateSubnet:   "connection_rate_subnet",
	LoginRateSubnet:        "login_rate_subnet",
	BufferBudget:           "buffer_budget",
	BackendLogin:           "backend_login",
	AuthBadResponse:        "auth_bad_response",
	AuthRefused:            "auth_refused",
	AuthUnavailable:        "auth_unavailable",
	EncryptionTimeout:      "encryption_timeout",
	EncryptionAbandoned:    "encryption_abandoned",
	MoveTimeout:            "move_timeout",
	MoveQueueFull:          "move_queue_full",
	MoveLost:               "move_lost",
	InflateTooLarge:        "inflate_too_large",
	BadCompression:         "bad_compression",
	ReframeTooLarge:        "reframe_too_large",
	BadLoginPacket:         "bad_login_packet",
	BadBackendFrame:        "bad_backend_frame",
}

// String returns the reason's label, as counted and logged.
func (r Reason) String() string { return labels[r] }

// Labels returns every reason's label, in order.
func Labels() []string { return labels[:] }

// Split returns the labels of the reasons a session may be refused for
// (every reason but the end-only ones) and of those a relaying session may
// be ended for.
func Split() (refusals, ends []string) {
	for r := Reason(0); r < Count; r++ {
		if !r.OnlyEnds() {
			refusals = append(refusals, r.String())
		}
	}
	for _, r := range Ends {
		ends = append(ends, r.String())
	}
	return refusals, ends
}

// AddCounts adds each reason's count in c (a loop's refusals or ends), when
// it is not 0, to m under the reason's label.
func AddCounts(m map[string]int64, c *[Count]atomic.Int64) {
	for r := Reason(0); r < Count; r++ {
		if n := c[r].Load(); n > 0 {
			m[r.String()] += n
		}
	}
}

// Ends are the reasons a relaying session is ended for.
var Ends = []Reason{IdleTimeout, FinTimeout, Shutdown, LoggedInElsewhere, MoveTimeout, MoveQueueFull, MoveLost, InflateTooLarge, BadCompression, ReframeTooLarge, BadBackendFrame}

// OnlyEnds reports whether r never refuses a session, only ends one.
func (r Reason) OnlyEnds() bool {
	switch r {
	case IdleTimeout, FinTimeout, MoveTimeout, MoveQueueFull, MoveLost, InflateTooLarge, BadCompression, ReframeTooLarge, BadBackendFrame:
		return true
	}
	return false
}

// DisconnectText is what a player reads for a refusal after the handshake;
// the group's offline message stands for backend_unavailable and
// no_healthy_backend.
func DisconnectText(r Reason) string {
	switch r {
	case UnknownHost:
		return config.UnknownHostDisconnect
	case HandshakeTimeout:
		return "Timed out while logging in"
	case PrerouteCap, BadFrame, BadLoginStart, BadLoginPacket:
		return "Protocol error"
	case BadUsername:
		return "Invalid username"
	case LoginRate:
		return "Too many logins from your address, wait a moment and try again"
	case LoginRateSubnet:
		return "Too many logins from your network, wait a moment and try again"
	case BufferBudget:
		return "The server is busy, try again in a moment"
	case MaxSessionsPerSubnet:
		return "Too many players from your network, try again later"
	case DuplicateLogin:
		return "You are already logged in to this network"
	case LoggedInElsewhere:
		return "You logged in from another location"
	case EncryptionTimeout:
		return "Took too long to log in" // vanilla's multiplayer.disconnect.slow_login
	}
	return ""
}
