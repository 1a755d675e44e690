// Package balance is the choice of a backend among a group's backends that
// are up, by the group's strategy (groups.*.strategy): weighted random,
// smooth weighted round-robin, least connections, lowest latency. It reads
// the backends through Backend and keeps no state but the round-robin
// positions; which backends are up, and the probes after a cooldown, are
// the proxy's.
package balance

import "time"

// Backend is a backend as the strategies read it. Its methods are called
// on the event loops, concurrently, and must not block.
type Backend interface {
	// Up reports whether it may get sessions.
	Up() bool
	// Weight is its configured weight, above 0.
	Weight() int
	// Load is the number of its sessions, relayed and connecting.
	Load() int64
	// Latency is the EWMA of its active checks' latency in nanoseconds; 0
	// before the first.
	Latency() int64
}

// latencyBand reports whether a backend whose latency EWMA is lat counts as
// as fast as the fastest, best: within 20% of it or 1 ms, whichever is
// more, so that measurement noise does not send every session to one
// backend.
func latencyBand(lat, best int64) bool {
	return lat <= best+max(best/5, int64(time.Millisecond))
}

// RoundRobin is a group's smooth weighted round-robin positions, one per
// event loop: a current weight per backend.
type RoundRobin []position

// position is one loop's. Padded so that loops do not share a cache line.
type position struct {
	cur []int
	_   [40]byte
}

// NewRoundRobin returns the positions of loops event loops (at least one)
// over a group of n backends.
func NewRoundRobin(loops, n int) RoundRobin {
	rr := make(RoundRobin, max(loops, 1))
	for i := range rr {
		rr[i].cur = make([]int, n)
	}
	return rr
}

// PickRoundRobin is smooth weighted round-robin over the backends of bs
// that are up, whose weights sum to total, from loop's position in rr. It
// returns the zero B when none is up.
func PickRoundRobin[B Backend](rr RoundRobin, loop int, bs []B, total int) B {
	var none B
	if len(rr) == 0 {
		return none
	}
	cur := rr[loop%len(rr)].cur
	best := -1
	for i, b := range bs {
		if !b.Up() {
			continue
		}
		cur[i] += b.Weight()
		if best < 0 || cur[i] > cur[best] {
			best = i
		}
	}
	if best < 0 {
		return none
	}
	cur[best] -= total
	return bs[best]
}

// PickLeastConnections picks the backend of bs up with the fewest sessions
// per unit of weight (compared as a/wa < b/wb, that is a*wb < b*wa),
// breaking ties at random with rnd, the caller's xorshift state. It
// returns the zero B when none is up.
func PickLeastConnections[B Backend](bs []B, rnd *uint64) B {
	var best B
	found := false
	var bestLoad int64
	ties := uint64(0)
	for _, b := range bs {
		if !b.Up() {
			continue
		}
		load := b.Load()
		switch {
		case !found, load*int64(best.Weight()) < bestLoad*int64(b.Weight()):
			best, bestLoad, ties, found = b, load, 1, true
		case load*int64(best.Weight()) == bestLoad*int64(b.Weight()):
			// Reservoir sampling: the k-th tie replaces the choice with
			// chance 1/k, so each of the tied is chosen alike.
			if ties++; xorshift(rnd)%ties == 0 {
				best, bestLoad = b, load
			}
		}
	}
	return best
}

// PickLowestLatency picks by weight at random among the backends of bs up
// whose latency is within latencyBand of the lowest; when no backend up
// has been measured, among all of them (weights summing to total).
func PickLowestLatency[B Backend](bs []B, rnd *uint64, total int) B {
	best := int64(0)
	for _, b := range bs {
		if lat := b.Latency(); lat > 0 && b.Up() && (best == 0 || lat < best) {
			best = lat
		}
	}
	if best == 0 {
		return pickWeighted(bs, rnd, total, 0)
	}
	sum := 0
	for _, b := range bs {
		if b.Up() && fastEnough(b, best) {
			sum += b.Weight()
		}
	}
	if sum == 0 { // every fast one went down since the first pass
		return pickWeighted(bs, rnd, total, 0)
	}
	return pickWeighted(bs, rnd, sum, best)
}

// fastEnough reports whether b has a latency measurement within
// latencyBand of best.
func fastEnough(b Backend, best int64) bool {
	lat := b.Latency()
	return lat > 0 && latencyBand(lat, best)
}

// PickWeighted picks at random, by weight, among the backends of bs up,
// whose weights sum to total. It returns the zero B when none is up.
func PickWeighted[B Backend](bs []B, rnd *uint64, total int) B {
	return pickWeighted(bs, rnd, total, 0)
}

// pickWeighted is PickWeighted among those fastEnough for best, when best
// is not 0.
func pickWeighted[B Backend](bs []B, rnd *uint64, total int, best int64) B {
	var last B
	if total <= 0 {
		return last
	}
	n := int(xorshift(rnd) % uint64(total))
	for _, b := range bs {
		if !b.Up() || best != 0 && !fastEnough(b, best) {
			continue
		}
		last = b
		if n < b.Weight() {
			return b
		}
		n -= b.Weight()
	}
	return last // one went down since total was summed
}

// xorshift advances the caller's random state s and returns it.
func xorshift(s *uint64) uint64 {
	x := *s
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*s = x
	return x
}
