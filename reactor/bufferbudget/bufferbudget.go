// Package bufferbudget keeps the process-wide count that the reactor's
// buffer budget bounds: the output queued for every connection and the
// unread input handlers hold (what connections that are not relaying yet
// keep in gnet's inbound buffers, which no watermark bounds). The reactor
// adds to it as it writes, drains and scans; handlers read it, and the
// metrics collector shows it.
package bufferbudget

import (
	"math/bits"
	"sync/atomic"
)

var queued, held atomic.Int64

// AddQueued adds d bytes (negative to take them off) to the queued output
// and returns the new total of queued output and held input.
func AddQueued(d int64) int64 { return queued.Add(d) + held.Load() }

// AddHeld adds d bytes (negative to give them back) to the held input and
// returns the new total of queued output and held input.
func AddHeld(d int64) int64 { return held.Add(d) + queued.Load() }

// Queued returns the output queued in the process for all connections, as
// last accounted.
func Queued() int64 { return queued.Load() }

// Held returns the unread input handlers have accounted.
func Held() int64 { return held.Load() }

// Over reports whether the output queued and the input held in the process
// are past budget (never, for 0).
func Over(budget int64) bool { return budget > 0 && queued.Load()+held.Load() > budget }

// InputFootprint is the memory gnet's inbound buffer takes to hold n
// unread bytes, as it grows it: nothing when empty, 1 KiB at least, else
// the power of two at or above n (past 4 KiB it grows by a quarter, so
// this is an upper bound).
func InputFootprint(n int) int {
	if n <= 0 {
		return 0
	}
	if n <= 1024 {
		return 1024
	}
	return 1 << bits.Len(uint(n-1))
}
