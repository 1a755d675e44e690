// Package proxymetrics is the proxy's counters, summed over its event
// loops (Stats), and their export to Prometheus (Collector). It reads the
// proxy through Source, so it knows nothing of sessions or loops.
package proxymetrics

import "github.com/tidegate/tidegate/reactor"

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
	Moves         map[string]int64 // moves between servers by outcome (session/proxy/move.Outcome)
	Kicks         map[string]int64 // backends' kicks by outcome (session/proxy/kick.Outcome)
	Bungee        map[string]int64 // BungeeCord channel messages by outcome (session/proxy/bungeechan.Outcome)

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
