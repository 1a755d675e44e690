package proxy

import "time"

// latencyBand reports whether a backend whose latency EWMA is lat counts as
// as fast as the fastest, best: within 20% of it or 1 ms, whichever is
// more, so that measurement noise does not send every session to one
// backend.
func latencyBand(lat, best int64) bool {
	return lat <= best+max(best/5, int64(time.Millisecond))
}

// rrState is one loop's smooth weighted round-robin position in a group:
// a current weight per backend. Padded so that loops do not share a cache
// line.
type rrState struct {
	cur []int
	_   [40]byte
}

// pickRoundRobin is smooth weighted round-robin over the backends up, whose
// weights sum to total, with loop's own position.
func (g *group) pickRoundRobin(loop, total int) *backend {
	if len(g.rr) == 0 {
		return nil
	}
	cur := g.rr[loop%len(g.rr)].cur
	best := -1
	for i, b := range g.backends {
		if b.state.Load() != stateUp {
			continue
		}
		cur[i] += b.weight
		if best < 0 || cur[i] > cur[best] {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	cur[best] -= total
	return g.backends[best]
}

// pickLeastConnections picks the backend up with the fewest sessions per
// unit of weight (relayed and connecting; compared as a/wa < b/wb, that is
// a*wb < b*wa), breaking ties at random with rnd.
func (g *group) pickLeastConnections(rnd *uint64) *backend {
	var best *backend
	var bestLoad int64
	ties := uint64(0)
	for _, b := range g.backends {
		if b.state.Load() != stateUp {
			continue
		}
		load := b.active.Load() + b.connecting.Load()
		switch {
		case best == nil, load*int64(best.weight) < bestLoad*int64(b.weight):
			best, bestLoad, ties = b, load, 1
		case load*int64(best.weight) == bestLoad*int64(b.weight):
			// Reservoir sampling: the k-th tie replaces the choice with
			// chance 1/k, so each of the tied is chosen alike.
			if ties++; xorshift(rnd)%ties == 0 {
				best, bestLoad = b, load
			}
		}
	}
	return best
}

// pickLowestLatency picks by weight at random among the backends up whose
// latency EWMA is within latencyBand of the lowest; when no backend up has
// been measured, among all of them (weights summing to total).
func (g *group) pickLowestLatency(rnd *uint64, total int) *backend {
	best := int64(0)
	for _, b := range g.backends {
		if lat := b.avgLatency.Load(); lat > 0 && b.state.Load() == stateUp && (best == 0 || lat < best) {
			best = lat
		}
	}
	if best == 0 {
		return g.pickWeighted(rnd, total, 0)
	}
	sum := 0
	for _, b := range g.backends {
		if b.state.Load() == stateUp && fastEnough(b, best) {
			sum += b.weight
		}
	}
	if sum == 0 { // every fast one went down since the first pass
		return g.pickWeighted(rnd, total, 0)
	}
	return g.pickWeighted(rnd, sum, best)
}

// fastEnough reports whether b has a latency measurement within
// latencyBand of best.
func fastEnough(b *backend, best int64) bool {
	lat := b.avgLatency.Load()
	return lat > 0 && latencyBand(lat, best)
}

// pickWeighted picks at random, by weight, among the backends up (only
// those fastEnough for best when best is not 0), whose weights sum to
// total.
func (g *group) pickWeighted(rnd *uint64, total int, best int64) *backend {
	if total <= 0 {
		return nil
	}
	n := int(xorshift(rnd) % uint64(total))
	var last *backend
	for _, b := range g.backends {
		if b.state.Load() != stateUp || best != 0 && !fastEnough(b, best) {
			continue
		}
		last = b
		if n < b.weight {
			return b
		}
		n -= b.weight
	}
	return last // one went down since total was summed
}

// endDial stops counting the session's connect in flight toward its
// backend, once, however the connect ended.
func (s *session) endDial() {
	if s.dialing {
		s.dialing = false
		s.target.connecting.Add(-1)
	}
}
