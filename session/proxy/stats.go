package proxy

import (
	"sync/atomic"

	"github.com/tidegate/tidegate/session/proxy/kick"
	"github.com/tidegate/tidegate/session/proxy/move"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// Reasons returns the labels of the reasons a session may be refused for
// (every reason but the end-only ones) and of those a relaying session may
// be ended for, the keys Stats' Rejected and Ended may have.
func (p *Proxy) Reasons() (refusals, ends []string) { return reasons.Split() }

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
	statusCached  atomic.Int64                // status pings answered from a fresh cache entry
	statusWaited  atomic.Int64                // status pings answered after waiting for a refresh
	rejected      [reasons.Count]atomic.Int64 // sessions refused before they relayed
	ended         [reasons.Count]atomic.Int64 // relaying sessions the proxy ended
	moves         move.Counts                 // moves by outcome
	kicks         kick.Counts                 // backends' kicks by outcome
	_             [64]byte
}
