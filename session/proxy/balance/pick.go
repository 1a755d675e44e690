package balance

import "github.com/tidegate/tidegate/session/proxy/config"

// Candidate is a backend Pick may also hand out as a probe.
type Candidate interface {
	Backend
	// Available reports whether the backend is up at now and, when it is
	// not, whether the caller just became its one probe (leased for lease
	// ns).
	Available(now, lease int64) (up, probe bool)
}

// Pick chooses a backend among bs that are up, by strategy s. A backend
// whose cooldown has ended goes first, as a probe, to the one caller that
// wins it (probe is then true). The zero B means no backend is up. rnd is
// the caller's per-loop random state and loop its loop's index (rr's
// position is per loop); now is the clock of the backends' health.
func Pick[B Candidate](s config.Strategy, rr RoundRobin, bs []B, rnd *uint64, loop int, now, lease int64) (b B, probe bool) {
	total := 0
	for _, b := range bs {
		switch up, probe := b.Available(now, lease); {
		case up:
			total += b.Weight()
		case probe:
			return b, true
		}
	}
	if total == 0 {
		return b, false
	}
	switch s {
	case config.StrategyRoundRobin:
		return PickRoundRobin(rr, loop, bs, total), false
	case config.StrategyLeastConnections:
		return PickLeastConnections(bs, rnd), false
	case config.StrategyLowestLatency:
		return PickLowestLatency(bs, rnd, total), false
	}
	return PickWeighted(bs, rnd, total), false
}
