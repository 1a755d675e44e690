package session

import (
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/players"
)

// Phase kinds.
const (
	KindDirect   = "direct"   // client to backend
	KindProxy    = "proxy"    // client to proxy to backend
	KindSyscalls = "syscalls" // a proxy phase on a fresh proxy under perf, for system calls only
)

// Phase is one measured phase.
type Phase struct {
	Target string `json:"target"`
	Kind   string `json:"kind"`
	Repeat int    `json:"repeat"`
	// Order is the phase's position in the run, from 0.
	Order            int     `json:"order"`
	Seconds          float64 `json:"seconds"`
	Roundtrips       int64   `json:"roundtrips"`
	RoundtripsPerSec float64 `json:"roundtrips_per_sec"`
	// FramesPerSec counts both directions: a roundtrip is two frames.
	FramesPerSec float64 `json:"frames_per_sec"`
	// MiBPerSec is one direction's bytes (frames with their length prefix).
	MiBPerSec float64 `json:"mib_per_sec"`
	P50Ms     float64 `json:"p50_ms"`
	P95Ms     float64 `json:"p95_ms"`
	P99Ms     float64 `json:"p99_ms"`
	P999Ms    float64 `json:"p999_ms"`
	MaxMs     float64 `json:"max_ms"`
	Errors    int64   `json:"errors"`
	// Failure is why the phase did not complete, if it did not.
	Failure      string   `json:"failure,omitempty"`
	ErrorSamples []string `json:"error_samples,omitempty"`

	// Figures of the proxy's processes over the measured interval (proxy
	// and syscalls phases); nil where not measured.
	CPUNsPerFrame    *float64 `json:"cpu_ns_per_frame,omitempty"`
	SyscallsPerFrame *float64 `json:"syscalls_per_frame,omitempty"`
	// SegmentsPerFrame is the TCP OutSegs delta of the network namespace
	// (host-wide on loopback) per relayed frame.
	SegmentsPerFrame *float64 `json:"segments_per_frame,omitempty"`
	RSSMiB           *float64 `json:"rss_mib,omitempty"`
	// HoldLateUs is, with --app-rtt, the mean time the clients' held bursts
	// went out after their due time, in µs: what the emulated RTT overshot
	// on the client side.
	HoldLateUs *float64 `json:"hold_late_us,omitempty"`
	Threads    int      `json:"threads,omitempty"`
	FDs        int      `json:"fds,omitempty"`
	// Players holds the players workload's own figures; nil in the echo
	// workloads.
	Players *PlayersPhase `json:"players,omitempty"`
}

// PhaseStats summarizes the phases of one kind of one target.
type PhaseStats struct {
	Phases           int            `json:"phases"`
	Errors           int64          `json:"errors"`
	Failed           int            `json:"failed"`
	RoundtripsPerSec harness.Spread `json:"roundtrips_per_sec"`
	FramesPerSec     harness.Spread `json:"frames_per_sec"`
	MiBPerSec        harness.Spread `json:"mib_per_sec"`
	P50Ms            harness.Spread `json:"p50_ms"`
	P95Ms            harness.Spread `json:"p95_ms"`
	P99Ms            harness.Spread `json:"p99_ms"`
	P999Ms           harness.Spread `json:"p999_ms"`
	SegmentsPerFrame harness.Spread `json:"segments_per_frame"`
}

// Summary is one target's figures over all repeats.
type Summary struct {
	Target string     `json:"target"`
	Direct PhaseStats `json:"direct"`
	Proxy  PhaseStats `json:"proxy"`
	// Ratio is each proxy phase's frames/s over its paired direct phase's.
	Ratio            harness.Spread `json:"proxy_direct_ratio"`
	CPUNsPerFrame    harness.Spread `json:"cpu_ns_per_frame"`
	SyscallsPerFrame harness.Spread `json:"syscalls_per_frame"`
	RSSMiB           harness.Spread `json:"rss_mib"`
	// Players holds the players workload's own figures.
	Players *PlayersSummary `json:"players,omitempty"`
}

// Result is a whole run.
type Result struct {
	Workload string `json:"workload,omitempty"`
	Params   Params `json:"params"`
	// Players is the players workload, which Params then does not describe.
	Players *players.Params `json:"players,omitempty"`
	Repeats int             `json:"repeats"`
	Targets []string        `json:"targets"`
	Setup   Setup           `json:"setup"`
	Phases  []Phase         `json:"phases"`
	Summary []Summary       `json:"summary"`
	Errors  int64           `json:"errors"`
	Failed  int             `json:"failed_phases"`
	Notes   []string        `json:"notes,omitempty"`
	// Goals compares each tidegate target with the peers (players workload).
	Goals []PlayersGoal `json:"goals,omitempty"`
	// TerminatedGoals holds the goals of issue #22 (players workload).
	TerminatedGoals []TerminatedGoal `json:"terminated_goals,omitempty"`
}

// Setup describes how the run was set up, for the report.
type Setup struct {
	ProxyCores   int    `json:"proxy_cores"`
	GoMaxProcs   int    `json:"goproxy_gomaxprocs,omitempty"`
	BackendLoops int    `json:"backend_loops"`
	RTT          string `json:"rtt,omitempty"`
	// AppRTT is the round-trip time emulated by the client and backend
	// holding every frame for half of it (--app-rtt); empty: none.
	AppRTT     string       `json:"app_rtt,omitempty"`
	Namespaces bool         `json:"namespaces"`
	Host       harness.Host `json:"host"`
}

// OK reports whether every phase completed with every echo correct.
func (r *Result) OK() bool { return r.Errors == 0 && r.Failed == 0 }

// valid reports whether a phase's figures may enter a median: it completed
// and every echo was right. A phase with wrong echoes measured a relay that
// does not work.
func (p Phase) valid() bool { return p.Failure == "" && p.Errors == 0 }

// validPhases returns the phases of ps whose figures count.
func validPhases(ps []Phase) []Phase { return harness.Keep(ps, Phase.valid) }

func phaseStats(ps []Phase) PhaseStats {
	s := PhaseStats{Phases: len(ps)}
	for _, p := range ps {
		s.Errors += p.Errors
		if p.Failure != "" {
			s.Failed++
		}
	}
	ok := validPhases(ps)
	get := func(f func(Phase) float64) harness.Spread { return harness.SpreadOf(ok, f) }
	s.RoundtripsPerSec = get(func(p Phase) float64 { return p.RoundtripsPerSec })
	s.FramesPerSec = get(func(p Phase) float64 { return p.FramesPerSec })
	s.MiBPerSec = get(func(p Phase) float64 { return p.MiBPerSec })
	s.P50Ms = get(func(p Phase) float64 { return p.P50Ms })
	s.P95Ms = get(func(p Phase) float64 { return p.P95Ms })
	s.P99Ms = get(func(p Phase) float64 { return p.P99Ms })
	s.P999Ms = get(func(p Phase) float64 { return p.P999Ms })
	s.SegmentsPerFrame = harness.SpreadOfPresent(ok, func(p Phase) *float64 { return p.SegmentsPerFrame })
	return s
}

// summarize fills r.Summary, r.Errors and r.Failed from r.Phases. Pairs are
// the direct and proxy phases of one target in one repeat.
func (r *Result) summarize() {
	r.Summary = nil
	r.Errors, r.Failed = 0, 0
	for _, p := range r.Phases {
		r.Errors += p.Errors
		if p.Failure != "" {
			r.Failed++
		}
	}
	for _, t := range r.Targets {
		var direct, proxy, sys []Phase
		var ratios []float64
		byRepeat := map[int][2]*Phase{}
		for i := range r.Phases {
			p := &r.Phases[i]
			if p.Target != t {
				continue
			}
			switch p.Kind {
			case KindDirect:
				direct = append(direct, *p)
				pair := byRepeat[p.Repeat]
				pair[0] = p
				byRepeat[p.Repeat] = pair
			case KindProxy:
				proxy = append(proxy, *p)
				pair := byRepeat[p.Repeat]
				pair[1] = p
				byRepeat[p.Repeat] = pair
			case KindSyscalls:
				sys = append(sys, *p)
			}
		}
		for _, pair := range byRepeat {
			if d, x := pair[0], pair[1]; d != nil && x != nil && d.valid() && x.valid() && d.FramesPerSec > 0 {
				ratios = append(ratios, x.FramesPerSec/d.FramesPerSec)
			}
		}
		r.Summary = append(r.Summary, Summary{
			Target:           t,
			Direct:           phaseStats(direct),
			Proxy:            phaseStats(proxy),
			Ratio:            harness.Of(ratios),
			CPUNsPerFrame:    harness.SpreadOfPresent(validPhases(proxy), func(p Phase) *float64 { return p.CPUNsPerFrame }),
			SyscallsPerFrame: harness.SpreadOfPresent(validPhases(sys), func(p Phase) *float64 { return p.SyscallsPerFrame }),
			RSSMiB:           harness.SpreadOfPresent(validPhases(proxy), func(p Phase) *float64 { return p.RSSMiB }),
		})
	}
	if r.Players != nil {
		r.summarizePlayers()
	}
}
