package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/players"
	"github.com/tidegate/tidegate/protocol/mc"
)

// smallPlayers is a players workload that runs in about two seconds a phase.
var smallPlayers = players.Params{Sessions: 20, Rate: 50, Warmup: 300 * time.Millisecond, Duration: time.Second,
	Drain: 2 * time.Second, FrameMin: 60, FrameMax: 200, ChunkEvery: 5, ChunkMin: 8 << 10, ChunkMax: 32 << 10,
	Seed: 7, Senders: 2, SendTick: time.Millisecond}

// TestPlayersCountsEveryReply runs the players workload straight to the
// backend and through the tidegate proxy: every frame scheduled in the
// measured interval has exactly one round trip, some of them chunk replies,
// and the figures and the summary are filled in.
func TestPlayersCountsEveryReply(t *testing.T) {
	backend := startChunkBackend(t)
	p := smallPlayers
	res, err := Run(context.Background(), Config{Workload: WorkloadPlayers, Players: &p, Repeats: 1, Backend: backend,
		Targets: []Target{{Name: "tidegate", Addr: startProxy(t, backend, false)}}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Fatalf("errors %d, failed %d: %+v", res.Errors, res.Failed, res.Phases)
	}
	// players' TestCountsEveryReply checks the chunk replies' count against
	// the schedule.
	frames := int64(p.Sessions*p.Rate) * int64(p.Duration/time.Second)
	for _, ph := range res.Phases {
		pl := ph.Players
		if ph.Roundtrips != frames || pl.ChunkReplies == 0 {
			t.Errorf("%s: %d round trips, %d chunk replies; want %d and some", ph.Kind, ph.Roundtrips, pl.ChunkReplies, frames)
		}
		// The counters are read at moments near the interval's edges, not
		// on the schedule. What is sent follows the schedule, within a few
		// percent of it unless a send went out late (then the late ones
		// fall on either side of an edge). What is received in the interval
		// also holds replies to frames sent before it whenever the readers
		// were held up at its start (seen under make stress: 1,300 of a
		// scheduled 1,000, with nothing late in the figures), so it is only
		// bounded by half and twice the schedule; the exact count of round
		// trips above is what checks that every reply came.
		lo, hi := frames*9/10, frames*11/10
		if pl.SendLateMaxMs > 100 {
			lo, hi = frames/2, frames*2
		}
		for _, c := range []struct {
			what   string
			n      int64
			lo, hi int64
		}{{"sent", pl.SentFrames, lo, hi}, {"received", pl.ReceivedFrames, frames / 2, frames * 2}} {
			if c.n < c.lo || c.n > c.hi {
				t.Errorf("%s: %d frames %s in the interval, want %d to %d (schedule %d, interval %.3fs, send late max %.1fms p99 %.1fms, p999 %.1fms)", ph.Kind, c.n, c.what, c.lo, c.hi, frames, ph.Seconds, pl.SendLateMaxMs, pl.SendLateP99Ms, ph.P999Ms)
			}
		}
		if pl.RelayedFrames != pl.SentFrames+pl.ReceivedFrames || ph.P50Ms <= 0 || ph.P50Ms > ph.P99Ms || ph.P99Ms > ph.P999Ms ||
			pl.ReceivedMiBPerSec <= pl.SentMiBPerSec || pl.SendLateMaxMs < pl.SendLateMeanMs || pl.GeneratorCPUPercent <= 0 {
			t.Errorf("%s: implausible figures %+v %+v", ph.Kind, ph, *pl)
		}
	}
	s := res.Summary[0].Players
	if s == nil || s.AddedP99Ms.N != 1 || s.Direct.MeanMs.N != 1 || s.Proxy.MaxMs.N != 1 {
		t.Fatalf("summary %+v", s)
	}
}

// replyRelay relays to backend and hands each frame the backend sends on
// the first connection to edit, numbered from 0 (Login Success): the
// frames it returns are sent on instead.
func replyRelay(t *testing.T, backend string, edit func(i int, frame []byte) [][]byte) string {
	return filterRelay(t, backend, func(conn int) func([]byte) []byte {
		if conn != 0 {
			return func(p []byte) []byte { return p }
		}
		var pending []byte
		i := 0
		return func(p []byte) []byte {
			pending = append(pending, p...)
			var out []byte
			for {
				n, _, err := mc.SplitFrame(pending, mc.MaxFrameLength)
				if err != nil {
					t.Errorf("relay: %v", err)
					return nil
				}
				if n == 0 {
					break
				}
				for _, f := range edit(i, append([]byte(nil), pending[:n]...)) {
					out = append(out, f...)
				}
				pending = pending[n:]
				i++
			}
			return out
		}
	})
}

// TestPlayersDetectsWrongReplies runs the proxy phase through relays that
// lose, repeat, corrupt or swallow replies of one session: each is counted
// as such and invalidates the run; the direct phase stays clean.
func TestPlayersDetectsWrongReplies(t *testing.T) {
	p := smallPlayers
	p.Sessions, p.Warmup, p.Duration, p.Drain = 5, 100*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	const victim = 12 // a reply in the warmup or the interval: losses count everywhere
	for _, tc := range []struct {
		name string
		edit func(i int, f []byte) [][]byte
		want func(*PlayersPhase) int64
	}{
		{"lost", func(i int, f []byte) [][]byte {
			if i == victim {
				return nil
			}
			return [][]byte{f}
		}, func(pl *PlayersPhase) int64 { return pl.Lost }},
		{"duplicated", func(i int, f []byte) [][]byte {
			if i == victim {
				return [][]byte{f, f}
			}
			return [][]byte{f}
		}, func(pl *PlayersPhase) int64 { return pl.Duplicated }},
		{"corrupted", func(i int, f []byte) [][]byte {
			if i == victim {
				f[len(f)-1] ^= 0x01
			}
			return [][]byte{f}
		}, func(pl *PlayersPhase) int64 { return pl.Corrupted }},
		{"unanswered", func(i int, f []byte) [][]byte {
			if i >= victim {
				return nil
			}
			return [][]byte{f}
		}, func(pl *PlayersPhase) int64 { return pl.Unanswered }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			backend := startChunkBackend(t)
			res, err := Run(context.Background(), Config{Workload: WorkloadPlayers, Players: &p, Repeats: 1, Backend: backend,
				Targets: []Target{{Name: "faulty", Addr: replyRelay(t, backend, tc.edit)}}, Log: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK() {
				t.Fatal("a relay that got replies wrong passed")
			}
			for _, ph := range res.Phases {
				switch {
				case ph.Failure != "":
					t.Errorf("%s phase failed: %s", ph.Kind, ph.Failure)
				case ph.Kind == KindDirect && ph.Errors != 0:
					t.Errorf("direct phase has %d errors: %q", ph.Errors, ph.ErrorSamples)
				case ph.Kind == KindProxy:
					got := tc.want(ph.Players)
					if got < 1 || ph.Errors != got || (tc.name != "unanswered" && got != 1) {
						t.Errorf("proxy phase: %d %s of %d errors (%q)", got, tc.name, ph.Errors, ph.ErrorSamples)
					}
				}
			}
			var table strings.Builder
			WriteTable(&table, res)
			if !strings.Contains(table.String(), "RUN IS INVALID") || !strings.Contains(table.String(), tc.name+" ") ||
				strings.Contains(table.String(), tc.name+" 0") {
				t.Errorf("table does not flag the run:\n%s", table.String())
			}
		})
	}
}

// TestPlayersSummaryAndReport builds a players result by hand: the added
// latency pairs phases by repeat, CPU is compared with the best other peer,
// the goals say met or missed, and the report has its tables and charts.
func TestPlayersSummaryAndReport(t *testing.T) {
	p := players.Default
	r := &Result{Workload: WorkloadPlayers, Players: &p, Repeats: 2, Targets: []string{"tidegate", "haproxy", "nginx"}}
	v := func(x float64) *float64 { return &x }
	cpu := map[string]float64{"tidegate": 700, "haproxy": 1000, "nginx": 900}
	added := map[string]float64{"tidegate": 0.2, "haproxy": 0.1, "nginx": 0.3}
	for _, tg := range r.Targets {
		for rep := range 2 {
			base := 1 + float64(rep) // the direct p99 of each repeat differs
			r.Phases = append(r.Phases,
				Phase{Target: tg, Kind: KindDirect, Repeat: rep, Roundtrips: 10, FramesPerSec: 2000, P50Ms: 0.1, P99Ms: base, P999Ms: 2 * base,
					Players: &PlayersPhase{SendLateMeanMs: 0.5, SendLateMaxMs: 2}},
				Phase{Target: tg, Kind: KindProxy, Repeat: rep, Roundtrips: 10, FramesPerSec: 2000, P50Ms: 0.1, P99Ms: base + added[tg],
					P999Ms: 2*base + added[tg], CPUNsPerFrame: v(cpu[tg]), RSSMiB: v(30),
					Players: &PlayersPhase{SendLateMeanMs: 0.5, SendLateMaxMs: 3, RSSPerSessionKiB: v(4), RelayedFrames: 40000}})
		}
	}
	r.summarize()
	ts := r.Summary[0].Players
	if ts.AddedP99Ms.N != 2 || ts.AddedP99Ms.Median < 0.199 || ts.AddedP99Ms.Median > 0.201 {
		t.Fatalf("added p99 %+v, want 0.2 from both repeats", ts.AddedP99Ms)
	}
	if ts.BestPeer != "nginx" || ts.CPUVsBestPeer == nil || *ts.CPUVsBestPeer != 700.0/900 {
		t.Fatalf("tidegate against %q: %v", ts.BestPeer, ts.CPUVsBestPeer)
	}
	if hp := r.Summary[1].Players; hp.BestPeer != "nginx" || *hp.CPUVsBestPeer != 1000.0/900 {
		t.Fatalf("haproxy against %q: %v, want nginx, not itself", hp.BestPeer, *hp.CPUVsBestPeer)
	}
	if len(r.Goals) != 1 {
		t.Fatalf("goals %+v", r.Goals)
	}
	g := r.Goals[0]
	if g.CPUPeer != "nginx" || !g.CPUMet || g.LatencyPeer != "haproxy" || g.LatencyMet {
		t.Fatalf("goal %+v: want CPU met against nginx, latency missed against haproxy", g)
	}
	if len(r.Notes) != 0 {
		t.Fatalf("notes %q: the generator kept its schedule", r.Notes)
	}
	r.Phases[0].Players.SendLateMeanMs = 1.5 // over the 1 ms tick
	r.summarize()
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "fell behind its schedule in 1 of 12 phases") {
		t.Fatalf("notes %q", r.Notes)
	}
	var table strings.Builder
	WriteTable(&table, r)
	for _, want := range []string{"p99.9 ms", "0.78× nginx", "RSS KiB/session", "goal tidegate: CPU/frame 700 ns, 0.78× nginx's 900 (goal at most 0.8×: met); " +
		"added p99 0.200 ms against haproxy's 0.100 (goal no worse: missed)"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	dir := t.TempDir()
	if err := WriteReport(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.md", "result.json", "cpu_ns_per_frame.png", "latency_p99.png", "added_latency.png", "rss_per_session.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("report file %s: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "--sessions 5000 --rate 20") || !strings.Contains(string(md), "Goal, tidegate") {
		t.Errorf("report.md:\n%s", md)
	}
}
