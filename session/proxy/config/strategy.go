package config

// Strategy is how a group chooses a session's backend among those that
// are up. Every strategy honours the weights (weight 0 takes a backend out
// of rotation) and the health state: a backend whose cooldown has ended is
// probed first, by one session, whatever the strategy (the proxy's group.pick).
type Strategy string

// Balancing strategies.
const (
	// StrategyWeightedRandom picks at random, each backend with a chance
	// proportional to its weight. It is the default.
	StrategyWeightedRandom Strategy = "weighted-random"
	// StrategyRoundRobin is smooth weighted round-robin: in every run of
	// W sessions (W the sum of the weights of the backends up) each backend
	// gets its weight's count, spread out rather than in a row. Each event
	// loop keeps its own position, so that picking takes no lock; over all
	// loops the shares are exact to within one session per loop.
	StrategyRoundRobin Strategy = "round-robin"
	// StrategyLeastConnections picks the backend with the fewest sessions
	// (relayed, and connecting) per unit of weight; ties go at random.
	StrategyLeastConnections Strategy = "least-connections"
	// StrategyLowestLatency picks among the backends whose active-check
	// latency (the EWMA of active probes) is within 20% (or 1 ms) of
	// the lowest, by weight at random. A backend without a measurement yet is
	// taken only when no backend up has one (then the whole group is
	// picked by weight at random), so it needs health.interval set.
	StrategyLowestLatency Strategy = "lowest-latency"
)

// strategyList names the strategies for messages.
const strategyList = "weighted-random, round-robin, least-connections or lowest-latency"

func (s Strategy) valid() bool {
	switch s {
	case "", StrategyWeightedRandom, StrategyRoundRobin, StrategyLeastConnections, StrategyLowestLatency:
		return true
	}
	return false
}
