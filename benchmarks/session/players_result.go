package session

import (
	"fmt"
	"math"
	"strings"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/players"
)

// PlayersPhase is what a players phase measured beyond Phase's figures.
// There, Roundtrips counts the correct replies to frames due in the
// measured interval (their round trips make the latency figures), FramesPerSec the
// frames sent and received per second and MiBPerSec their bytes.
type PlayersPhase struct {
	Sessions     int     `json:"sessions"`
	LoginSeconds float64 `json:"login_seconds"`
	// SentFrames and ReceivedFrames are the frames the sessions sent and
	// got in the measured interval; in a proxy phase, the frames the proxy
	// relayed each way. RelayedFrames is their sum, what CPU ns/frame
	// divides by.
	SentFrames        int64   `json:"sent_frames"`
	ReceivedFrames    int64   `json:"received_frames"`
	RelayedFrames     int64   `json:"relayed_frames"`
	SentMiBPerSec     float64 `json:"sent_mib_per_sec"`
	ReceivedMiBPerSec float64 `json:"received_mib_per_sec"`
	// ChunkReplies is how many of the round trips were chunk replies.
	ChunkReplies int64 `json:"chunk_replies"`
	// SendLate figures say how long after its due time a send of the
	// measured interval was written: whether the load generator kept its
	// schedule.
	SendLateMeanMs float64 `json:"send_late_mean_ms"`
	SendLateP99Ms  float64 `json:"send_late_p99_ms"`
	SendLateMaxMs  float64 `json:"send_late_max_ms"`
	// GeneratorCPUPercent is the load generator's (this process's) CPU time
	// in the measured interval, in percent of one core.
	GeneratorCPUPercent float64 `json:"generator_cpu_percent"`
	// Wrong replies, all counted in Phase.Errors: replies that never came
	// (a later one came first), came twice, differed from what was due, or
	// had not come Drain after the last send.
	Lost       int64 `json:"lost"`
	Duplicated int64 `json:"duplicated"`
	Corrupted  int64 `json:"corrupted"`
	Unanswered int64 `json:"unanswered"`
	// RSSPerSessionKiB is, in a proxy phase, the proxy's RSS at the end of
	// the measured interval less its RSS before the sessions of its first
	// phase connected (the proxy is not restarted between phases), per
	// session.
	RSSPerSessionKiB *float64 `json:"rss_per_session_kib,omitempty"`
	// LoginCPUUs is, in a proxy phase, the proxy's CPU from before the
	// first session connected until every session was in play, per
	// session, in µs. OtherFrames counts the frames of the proxy's own a
	// Modern phase skipped.
	LoginCPUUs  *float64 `json:"login_cpu_us,omitempty"`
	OtherFrames int64    `json:"other_frames,omitempty"`
}

// loginsPerSec is how fast the phase's sessions logged in.
func (pl *PlayersPhase) loginsPerSec() float64 {
	if pl.LoginSeconds <= 0 {
		return 0
	}
	return float64(pl.Sessions) / pl.LoginSeconds
}

// PlayersSummary is one target's players figures over the repeats.
type PlayersSummary struct {
	// Added latency: each proxy phase's quantile less that of the direct
	// phase of the same repeat.
	AddedP50Ms  harness.Spread `json:"added_p50_ms"`
	AddedP99Ms  harness.Spread `json:"added_p99_ms"`
	AddedP999Ms harness.Spread `json:"added_p999_ms"`
	// RSSPerSessionKiB, LoginsPerSec and LoginCPUUs are over the proxy
	// phases.
	RSSPerSessionKiB harness.Spread `json:"rss_per_session_kib"`
	LoginsPerSec     harness.Spread `json:"logins_per_sec"`
	LoginCPUUs       harness.Spread `json:"login_cpu_us"`
	// SendLate figures are over the target's direct and proxy phases.
	Direct SendLate `json:"direct_send_late"`
	Proxy  SendLate `json:"proxy_send_late"`
	// CPUVsBestPeer is the median CPU ns/frame over that of BestPeer, the
	// peer (a target not named tidegate*) other than this one with the
	// lowest; nil without one.
	CPUVsBestPeer *float64 `json:"cpu_vs_best_peer,omitempty"`
	BestPeer      string   `json:"best_peer,omitempty"`
}

// SendLate says whether the load generator kept its schedule in a kind of
// phase: how late its sends went out (the mean and the most of each
// phase) and its CPU, over the phases.
type SendLate struct {
	MeanMs harness.Spread `json:"mean_ms"`
	MaxMs  harness.Spread `json:"max_ms"`
	// GeneratorCPUPercent is the load generator's CPU, percent of a core.
	GeneratorCPUPercent harness.Spread `json:"generator_cpu_percent"`
}

// sendLateOf summarizes the send lateness of players phases ps.
func sendLateOf(ps []Phase) SendLate {
	var mean, most, cpu []float64
	for _, p := range ps {
		mean, most = append(mean, p.Players.SendLateMeanMs), append(most, p.Players.SendLateMaxMs)
		cpu = append(cpu, p.Players.GeneratorCPUPercent)
	}
	return SendLate{MeanMs: harness.Of(mean), MaxMs: harness.Of(most), GeneratorCPUPercent: harness.Of(cpu)}
}

// Goals of issue #14 for a tidegate target in the players workload.
const (
	// GoalCPUVsBestPeer is the highest CPU ns/frame allowed, relative to
	// the best peer's.
	GoalCPUVsBestPeer = 0.8
)

// PlayersGoal compares a tidegate target with the peers on the goals:
// CPU per relayed frame at most GoalCPUVsBestPeer of the best peer's, and
// p99 added latency no worse than the best peer's (medians over repeats).
type PlayersGoal struct {
	Target            string  `json:"target"`
	CPUNsPerFrame     float64 `json:"cpu_ns_per_frame"`
	CPUPeer           string  `json:"cpu_peer"`
	PeerCPUNsPerFrame float64 `json:"peer_cpu_ns_per_frame"`
	CPUVsPeer         float64 `json:"cpu_vs_peer"`
	CPUMet            bool    `json:"cpu_met"`
	AddedP99Ms        float64 `json:"added_p99_ms"`
	LatencyPeer       string  `json:"latency_peer"`
	PeerAddedP99Ms    float64 `json:"peer_added_p99_ms"`
	LatencyMet        bool    `json:"latency_met"`
}

// isTidegate reports whether a target is tidegate rather than a peer.
func isTidegate(target string) bool { return strings.HasPrefix(target, "tidegate") }

// relayedFrames is what a phase's CPU and system calls are divided by.
func (p *Phase) relayedFrames() float64 {
	if p.Players != nil {
		return float64(p.Players.RelayedFrames)
	}
	return float64(2 * p.Roundtrips)
}

// playersPhaseOf turns a players phase's measurements into a Phase.
func playersPhaseOf(target, kind string, repeat, order int, params players.Params, run players.Measurement, err error) Phase {
	p := Phase{Target: target, Kind: kind, Repeat: repeat, Order: order,
		Players: &PlayersPhase{Sessions: params.Sessions, LoginSeconds: run.Login.Seconds()}}
	if err != nil {
		p.Failure = err.Error()
		return p
	}
	secs := run.Elapsed.Seconds()
	pl := p.Players
	pl.SentFrames, pl.ReceivedFrames, pl.RelayedFrames = run.Sent, run.Received, run.Sent+run.Received
	pl.SentMiBPerSec = float64(run.SentBytes) / secs / (1 << 20)
	pl.ReceivedMiBPerSec = float64(run.ReceivedBytes) / secs / (1 << 20)
	pl.ChunkReplies = run.Chunks
	pl.SendLateMeanMs = run.Late.Mean() / 1e6
	pl.SendLateP99Ms = float64(run.Late.ValueAtQuantile(99)) / 1e6
	pl.SendLateMaxMs = float64(run.Late.Max()) / 1e6
	pl.GeneratorCPUPercent = 100 * run.GeneratorCPU.Seconds() / secs
	pl.Lost, pl.Duplicated, pl.Corrupted, pl.Unanswered = run.Lost, run.Duplicated, run.Corrupted, run.Unanswered
	pl.OtherFrames = run.Others
	p.Seconds = secs
	p.Roundtrips = run.Hist.TotalCount()
	p.RoundtripsPerSec = float64(p.Roundtrips) / secs
	p.FramesPerSec = float64(pl.RelayedFrames) / secs
	p.MiBPerSec = pl.SentMiBPerSec + pl.ReceivedMiBPerSec
	ms := func(q float64) float64 { return float64(run.Hist.ValueAtQuantile(q)) / 1e6 }
	p.P50Ms, p.P95Ms, p.P99Ms, p.P999Ms = ms(50), ms(95), ms(99), ms(99.9)
	p.MaxMs = float64(run.Hist.Max()) / 1e6
	p.Errors = run.Errors()
	p.ErrorSamples = run.Samples
	return p
}

// summarizePlayers adds the players figures to r.Summary and r.Goals, and
// a note when the load generator fell behind its schedule.
func (r *Result) summarizePlayers() {
	r.Goals = nil
	tickMs := float64(r.Players.SendTick) / 1e6
	periodMs := 1e3 / float64(r.Players.Rate)
	behind, phases := 0, 0
	for _, p := range validPhases(r.Phases) {
		if p.Players == nil {
			continue
		}
		phases++
		if p.Players.SendLateMeanMs > tickMs || p.Players.SendLateMaxMs >= periodMs {
			behind++
		}
	}
	if behind > 0 {
		r.note(fmt.Sprintf("the load generator fell behind its schedule in %d of %d phases (sends late by more than the %v send tick "+
			"on average, or one a whole %.0f ms period late): their latency figures measure the generator and the machine as well as the proxy",
			behind, phases, r.Players.SendTick, periodMs))
	}
	for i := range r.Summary {
		s := &r.Summary[i]
		var direct, proxy []Phase
		for _, p := range r.Phases {
			if p.Target != s.Target || !p.valid() || p.Players == nil {
				continue
			}
			switch p.Kind {
			case KindDirect:
				direct = append(direct, p)
			case KindProxy:
				proxy = append(proxy, p)
			}
		}
		var added [3][]float64
		var logins []float64
		for _, x := range proxy {
			logins = append(logins, x.Players.loginsPerSec())
		}
		for _, x := range proxy {
			for _, d := range direct {
				if d.Repeat == x.Repeat {
					added[0] = append(added[0], x.P50Ms-d.P50Ms)
					added[1] = append(added[1], x.P99Ms-d.P99Ms)
					added[2] = append(added[2], x.P999Ms-d.P999Ms)
				}
			}
		}
		s.Players = &PlayersSummary{
			AddedP50Ms: harness.Of(added[0]), AddedP99Ms: harness.Of(added[1]), AddedP999Ms: harness.Of(added[2]),
			RSSPerSessionKiB: harness.SpreadOfPresent(proxy, func(p Phase) *float64 { return p.Players.RSSPerSessionKiB }),
			LoginsPerSec:     harness.Of(logins),
			LoginCPUUs:       harness.SpreadOfPresent(proxy, func(p Phase) *float64 { return p.Players.LoginCPUUs }),
			Direct:           sendLateOf(direct),
			Proxy:            sendLateOf(proxy),
		}
	}
	for i := range r.Summary {
		s := &r.Summary[i]
		if s.CPUNsPerFrame.N == 0 {
			continue
		}
		best, ok := r.bestPeer(s.Target, func(o Summary) harness.Spread { return o.CPUNsPerFrame })
		if ok && best.CPUNsPerFrame.Median > 0 {
			v := s.CPUNsPerFrame.Median / best.CPUNsPerFrame.Median
			s.Players.CPUVsBestPeer, s.Players.BestPeer = &v, best.Target
		}
	}
	for _, s := range r.Summary {
		if !isTidegate(s.Target) || s.CPUNsPerFrame.N == 0 || s.Players.AddedP99Ms.N == 0 {
			continue
		}
		cpuPeer, ok1 := r.bestPeer(s.Target, func(o Summary) harness.Spread { return o.CPUNsPerFrame })
		latPeer, ok2 := r.bestPeer(s.Target, func(o Summary) harness.Spread { return o.Players.AddedP99Ms })
		if !ok1 || !ok2 || cpuPeer.CPUNsPerFrame.Median <= 0 {
			continue
		}
		g := PlayersGoal{Target: s.Target, CPUNsPerFrame: s.CPUNsPerFrame.Median,
			CPUPeer: cpuPeer.Target, PeerCPUNsPerFrame: cpuPeer.CPUNsPerFrame.Median,
			AddedP99Ms: s.Players.AddedP99Ms.Median, LatencyPeer: latPeer.Target, PeerAddedP99Ms: latPeer.Players.AddedP99Ms.Median}
		g.CPUVsPeer = g.CPUNsPerFrame / g.PeerCPUNsPerFrame
		g.CPUMet = g.CPUVsPeer <= GoalCPUVsBestPeer
		g.LatencyMet = g.AddedP99Ms <= g.PeerAddedP99Ms
		r.Goals = append(r.Goals, g)
	}
	r.summarizeTerminated()
}

// bestPeer returns the summary of the peer other than target with the
// lowest median of the figure get picks, among those that have it.
func (r *Result) bestPeer(target string, get func(Summary) harness.Spread) (Summary, bool) {
	var best Summary
	low := math.Inf(1)
	for _, o := range r.Summary {
		if o.Target == target || isTidegate(o.Target) || o.Players == nil {
			continue
		}
		if v := get(o); v.N > 0 && v.Median < low {
			best, low = o, v.Median
		}
	}
	return best, !math.IsInf(low, 1)
}
