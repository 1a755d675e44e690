package session

import (
	"fmt"
	"strings"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/peers"
)

// Goals of issue #22 for tidegate's targets that terminate the login, in
// the players workload: CPU per relayed frame at most GoalCPUVsGate of
// Gate's and GoalCPUVsTransparent of tidegate's transparent relay, RSS per
// session at most GoalRSSVsGate of Gate's (medians over the repeats).
const (
	GoalCPUVsGate        = 0.5
	GoalCPUVsTransparent = 1.6
	GoalRSSVsGate        = 0.25
)

// TerminatedGoal compares a tidegate target that terminates the login with
// Gate in the same mode (tidegate-online with gate, tidegate-offline with
// gate-offline) and with tidegate's transparent relay (tidegate). A
// comparison whose other target did not run, or has no figure, is nil.
type TerminatedGoal struct {
	Target           string      `json:"target"`
	CPUVsGate        *Comparison `json:"cpu_vs_gate,omitempty"`
	CPUVsTransparent *Comparison `json:"cpu_vs_transparent,omitempty"`
	RSSVsGate        *Comparison `json:"rss_vs_gate,omitempty"`
}

// Comparison is one figure of a target against another's, and its goal.
type Comparison struct {
	Value      float64 `json:"value"`
	Other      string  `json:"other"`
	OtherValue float64 `json:"other_value"`
	Ratio      float64 `json:"ratio"`
	Goal       float64 `json:"goal"`
	Met        bool    `json:"met"`
}

// gateOf is the Gate target each terminating tidegate target is held against.
var gateOf = map[string]string{string(peers.KindTidegateOnline): string(peers.KindGate),
	string(peers.KindTidegateOffline): string(peers.KindGateOffline)}

// summarizeTerminated sets r.TerminatedGoals from the summaries.
func (r *Result) summarizeTerminated() {
	r.TerminatedGoals = nil
	by := map[string]Summary{}
	for _, s := range r.Summary {
		by[s.Target] = s
	}
	compare := func(s Summary, other string, goal float64, get func(Summary) harness.Spread) *Comparison {
		o, ok := by[other]
		if !ok || get(s).N == 0 || get(o).N == 0 || get(o).Median <= 0 {
			return nil
		}
		c := &Comparison{Value: get(s).Median, Other: other, OtherValue: get(o).Median, Goal: goal}
		c.Ratio = c.Value / c.OtherValue
		c.Met = c.Ratio <= goal
		return c
	}
	cpu := func(s Summary) harness.Spread { return s.CPUNsPerFrame }
	rss := func(s Summary) harness.Spread { return playersOf(s).RSSPerSessionKiB }
	for _, s := range r.Summary {
		gate, ok := gateOf[s.Target]
		if !ok {
			continue
		}
		g := TerminatedGoal{Target: s.Target, CPUVsGate: compare(s, gate, GoalCPUVsGate, cpu),
			CPUVsTransparent: compare(s, string(peers.KindTidegate), GoalCPUVsTransparent, cpu),
			RSSVsGate:        compare(s, gate, GoalRSSVsGate, rss)}
		if g.CPUVsGate != nil || g.CPUVsTransparent != nil || g.RSSVsGate != nil {
			r.TerminatedGoals = append(r.TerminatedGoals, g)
		}
	}
}

// String says how the target fared against each goal it could be held to.
func (g TerminatedGoal) String() string {
	var parts []string
	for _, c := range []struct {
		what string
		c    *Comparison
	}{{"CPU/frame (ns)", g.CPUVsGate}, {"CPU/frame (ns)", g.CPUVsTransparent}, {"RSS/session (KiB)", g.RSSVsGate}} {
		if c.c != nil {
			parts = append(parts, fmt.Sprintf("%s %.1f, %.2f× %s's %.1f (goal at most %.2g×: %s)", c.what, c.c.Value, c.c.Ratio,
				c.c.Other, c.c.OtherValue, c.c.Goal, map[bool]string{true: "met", false: "missed"}[c.c.Met]))
		}
	}
	return g.Target + ": " + strings.Join(parts, "; ")
}
