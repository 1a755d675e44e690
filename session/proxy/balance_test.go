package proxy

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/balance"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// testGroup is a group of backends a, b, c, ... with the given weights, all
// up, for loops event loops.
func testGroup(s config.Strategy, loops int, weights ...int) *group {
	g := &group{name: "g", strategy: s}
	for i, w := range weights {
		g.backends = append(g.backends, &backend{addr: string(rune('a' + i)), weight: w, group: g, backendHealth: &backendHealth{}})
	}
	if s == config.StrategyRoundRobin {
		g.rr = balance.NewRoundRobin(loops, len(g.backends))
	}
	return g
}

// downUntil marks b down until the router time until (its cooldown is
// over from then on), as a failed probe at until with no cooldown does.
func downUntil(b *backend, until int64) {
	b.MarkFailed(config.ProbeConfig{Failures: 1}, until, true)
}

// measured gives b a fresh health whose latency EWMA is d, as after its
// first passed check.
func measured(b *backend, d time.Duration) {
	b.backendHealth = &backendHealth{}
	b.CheckPassed(d)
}

// picks counts n picks by backend address, each on loop i%loops.
func picks(t *testing.T, g *group, n, loops int, rnd *uint64) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for i := range n {
		b, probe := g.pick(rnd, i%loops, 0, 1)
		if b == nil || probe {
			t.Fatalf("pick %d: %v, probe %v", i, b, probe)
		}
		counts[b.addr]++
	}
	return counts
}

func TestWeightedRandomDistribution(t *testing.T) {
	g := testGroup(config.StrategyWeightedRandom, 1, 1, 2, 3)
	rnd := uint64(7)
	got := picks(t, g, 60000, 1, &rnd)
	for addr, want := range map[string]int{"a": 10000, "b": 20000, "c": 30000} {
		if d := got[addr] - want; d < -want/20 || d > want/20 {
			t.Errorf("%s picked %d times of 60000, want %d ± 5%%", addr, got[addr], want)
		}
	}
}

// TestRoundRobinDistribution: each run of W picks (W the sum of the weights)
// gives each backend exactly its weight, spread out; per loop, so that two
// loops together are exact too; a backend down is left out and the others
// share its turns by weight.
func TestRoundRobinDistribution(t *testing.T) {
	g := testGroup(config.StrategyRoundRobin, 1, 1, 2, 3)
	var seq strings.Builder
	rnd := uint64(1)
	for range 12 {
		b, _ := g.pick(&rnd, 0, 0, 1)
		seq.WriteString(b.addr)
	}
	// Smooth weighted round-robin for 1, 2, 3: c b a c b c, and again; c
	// never three times in a row.
	if got := seq.String(); got != "cbacbccbacbc" {
		t.Fatalf("round-robin order %q, want cbacbccbacbc", got)
	}
	g = testGroup(config.StrategyRoundRobin, 2, 1, 2, 3)
	if got := picks(t, g, 600, 2, &rnd); got["a"] != 100 || got["b"] != 200 || got["c"] != 300 {
		t.Fatalf("600 picks on two loops: %v, want exactly 100, 200, 300", got)
	}
	downUntil(g.backends[2], nowUnix()+int64(time.Hour)) // c down
	if got := picks(t, g, 300, 2, &rnd); got["a"] != 100 || got["b"] != 200 || got["c"] != 0 {
		t.Fatalf("300 picks with c down: %v, want exactly 100, 200, 0", got)
	}
}

// TestLeastConnectionsDistribution: sessions go where the fewest are per
// unit of weight, counting connects in flight, so a burst spreads by weight
// at once; a backend whose sessions end gets the next ones.
func TestLeastConnectionsDistribution(t *testing.T) {
	g := testGroup(config.StrategyLeastConnections, 1, 1, 2, 3)
	rnd := uint64(3)
	for i := range 60 {
		b, _ := g.pick(&rnd, 0, 0, 1)
		b.Connecting.Add(1) // what connect does
		if i%2 == 0 {       // half of them are connected by now
			b.Connecting.Add(-1)
			b.Active.Add(1)
		}
	}
	for i, want := range []int64{10, 20, 30} {
		b := g.backends[i]
		if got := b.Active.Load() + b.Connecting.Load(); got != want {
			t.Errorf("%s has %d sessions after 60 picks, want %d", b.addr, got, want)
		}
	}
	g.backends[1].Active.Add(-5) // b: 15 for weight 2, the least loaded
	for range 4 {
		if b, _ := g.pick(&rnd, 0, 0, 1); b.addr != "b" {
			t.Fatalf("picked %s, want b with the fewest sessions per weight", b.addr)
		} else {
			b.Active.Add(1)
		}
	}
	// Ties go at random among the tied, not always to the first.
	g = testGroup(config.StrategyLeastConnections, 1, 1, 1, 1)
	if got := picks(t, g, 3000, 1, &rnd); got["a"] < 900 || got["b"] < 900 || got["c"] < 900 {
		t.Fatalf("ties between idle backends: %v, want each about 1000", got)
	}
}

// TestLowestLatencyDistribution: the backends within the band of the
// lowest latency share the sessions by weight; slower ones and unmeasured
// ones get none while a measured one is up; with no measurement at all it
// is weighted random.
func TestLowestLatencyDistribution(t *testing.T) {
	g := testGroup(config.StrategyLowestLatency, 1, 1, 3, 1, 1)
	rnd := uint64(5)
	if got := picks(t, g, 6000, 1, &rnd); got["b"] < 2700 || got["b"] > 3300 {
		t.Fatalf("no measurements: %v, want weighted random (b about 3000)", got)
	}
	measured(g.backends[0], 10*time.Millisecond)
	measured(g.backends[1], 11*time.Millisecond) // within 20%
	measured(g.backends[2], 30*time.Millisecond) // slow
	// d is unmeasured.
	got := picks(t, g, 8000, 1, &rnd)
	if got["c"] != 0 || got["d"] != 0 || got["a"] < 1800 || got["a"] > 2200 || got["b"] < 5800 || got["b"] > 6200 {
		t.Fatalf("a 10ms (weight 1), b 11ms (weight 3), c 30ms, d unmeasured: %v; want a:b about 1:3, none to c or d", got)
	}
	// Small latencies: the band is at least 1 ms.
	measured(g.backends[0], 100*time.Microsecond)
	measured(g.backends[1], 900*time.Microsecond)
	if got := picks(t, g, 400, 1, &rnd); got["a"] == 0 || got["b"] == 0 || got["c"] != 0 {
		t.Fatalf("100µs and 900µs should share: %v", got)
	}
	downUntil(g.backends[0], nowUnix()+int64(time.Hour))
	downUntil(g.backends[1], nowUnix()+int64(time.Hour))
	if got := picks(t, g, 100, 1, &rnd); got["c"] != 100 {
		t.Fatalf("with the fast ones down: %v, want all to c, the fastest up", got)
	}
}

// TestStrategiesProbeFirst: whatever the strategy, a backend whose
// cooldown has ended is handed out once, as the probe, before the
// strategy chooses among those up; a backend down gets nothing.
func TestStrategiesProbeFirst(t *testing.T) {
	for _, s := range []config.Strategy{config.StrategyWeightedRandom, config.StrategyRoundRobin, config.StrategyLeastConnections, config.StrategyLowestLatency} {
		t.Run(string(s), func(t *testing.T) {
			g := testGroup(s, 1, 1, 1, 1)
			now := nowUnix()
			downUntil(g.backends[0], now-1)                // cooldown over
			downUntil(g.backends[1], now+int64(time.Hour)) // down
			rnd := uint64(9)
			if b, probe := g.pick(&rnd, 0, now, int64(time.Minute)); b != g.backends[0] || !probe {
				t.Fatalf("first pick %v probe %v, want a as the probe", b, probe)
			}
			for range 20 {
				if b, probe := g.pick(&rnd, 0, now, int64(time.Minute)); b != g.backends[2] || probe {
					t.Fatalf("pick during the probe: %v probe %v, want c", b, probe)
				}
			}
			downUntil(g.backends[2], now+int64(time.Hour))
			if b, _ := g.pick(&rnd, 0, now, int64(time.Minute)); b != nil {
				t.Fatalf("with none up and the probe out, picked %s", b.addr)
			}
		})
	}
}

// BenchmarkPick is one backend choice among 4 for each strategy.
func BenchmarkPick(b *testing.B) {
	for _, s := range []config.Strategy{config.StrategyWeightedRandom, config.StrategyRoundRobin, config.StrategyLeastConnections, config.StrategyLowestLatency} {
		b.Run(string(s), func(b *testing.B) {
			g := testGroup(s, 1, 1, 2, 3, 4)
			for i, be := range g.backends {
				measured(be, time.Duration(i+1)*time.Millisecond)
			}
			rnd := uint64(1)
			b.ReportAllocs()
			for b.Loop() {
				if be, _ := g.pick(&rnd, 0, 0, 1); be == nil {
					b.Fatal("nothing picked")
				}
			}
		})
	}
}

// TestStrategiesEndToEnd: logins through a proxy reach the backends of a
// round-robin group in turn, and those of a least-connections group
// spread evenly while they stay connected; the connecting counts return
// to 0.
func TestStrategiesEndToEnd(t *testing.T) {
	var addrs []string
	for range 3 {
		addrs = append(addrs, startBackend(t, mcbackend.Config{}))
	}
	for _, s := range []config.Strategy{config.StrategyRoundRobin, config.StrategyLeastConnections} {
		t.Run(string(s), func(t *testing.T) {
			p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
loops: 1   # round-robin positions are per loop: one loop makes the order exact
default_group: main
groups:
  main:
    strategy: %s
    backends: [{addr: %q}, {addr: %q, weight: 2}, {addr: %q}]
`, s, addrs[0], addrs[1], addrs[2]))
			var conns []net.Conn
			for i := range 8 {
				c := dial(t, addr)
				login17(t, c, "localhost", fmt.Sprintf("player%d", i))
				conns = append(conns, c)
			}
			waitStats(t, p, "8 routed sessions", func(st proxymetrics.Stats) bool { return st.Routed == 8 })
			for i, want := range []int64{2, 4, 2} {
				if got := health(t, p, addrs[i]).Sessions; got != want {
					t.Errorf("backend %d (weight %d) has %d sessions of 8, want %d", i, want/2, got, want)
				}
			}
			for _, b := range p.cur().router.groups["main"].backends {
				if n := b.Connecting.Load(); n != 0 {
					t.Errorf("%s: %d connects still counted in flight", b.addr, n)
				}
			}
			for _, c := range conns {
				c.Close()
			}
			waitStats(t, p, "every session to end", func(st proxymetrics.Stats) bool { return st.Active == 0 })
		})
	}
}

// TestReloadKeepsLeastConnectionsCounts: a reload keeps the session counts
// of the backends it keeps, so least-connections goes on from them: with
// 2 sessions on each of a and b and b's weight raised to 3, the next three
// sessions all go to b.
func TestReloadKeepsLeastConnectionsCounts(t *testing.T) {
	a, b := startBackend(t, mcbackend.Config{}), startBackend(t, mcbackend.Config{})
	text := func(weightB int) string {
		return fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
loops: 1
default_group: main
groups: {main: {strategy: least-connections, backends: [{addr: %q}, {addr: %q, weight: %d}]}}
`, a, b, weightB)
	}
	p, addr := startProxy(t, text(1))
	login := func(name string) {
		t.Helper()
		login17(t, dial(t, addr), "localhost", name)
	}
	for i := range 4 {
		login(fmt.Sprint("before", i))
	}
	if sa, sb := health(t, p, a).Sessions, health(t, p, b).Sessions; sa != 2 || sb != 2 {
		t.Fatalf("before the reload: %d and %d sessions, want 2 and 2", sa, sb)
	}
	cfg, err := testParseConfig(t, text(3))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		login(fmt.Sprint("after", i))
		if sb := health(t, p, b).Sessions; sb != int64(3+i) {
			t.Fatalf("after the reload, session %d: b has %d sessions, want %d (a has %d)", i, sb, 3+i, health(t, p, a).Sessions)
		}
	}
}
