package session

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// smallPlayers is a players workload that runs in about two seconds a phase.
var smallPlayers = PlayersParams{Sessions: 20, Rate: 50, Warmup: 300 * time.Millisecond, Duration: time.Second,
	Drain: 2 * time.Second, FrameMin: 60, FrameMax: 200, ChunkEvery: 5, ChunkMin: 8 << 10, ChunkMax: 32 << 10,
	Seed: 7, Senders: 2, SendTick: time.Millisecond}

// scheduled returns how many frames p schedules in the measured interval,
// and how many of them are chunk requests: frame n of session i is due at
// n×period + i×period/sessions after the first send, and the interval
// runs from Warmup to Warmup+Duration after it.
func scheduled(p PlayersParams) (frames, chunks int64) {
	k := newPlayersCodec(p)
	period := int64(time.Second) / int64(p.Rate)
	for i := range p.Sessions {
		off := int64(i) * period / int64(p.Sessions)
		for n := int64(0); ; n++ {
			due := n*period + off
			if due >= int64(p.Warmup+p.Duration) {
				break
			}
			if due >= int64(p.Warmup) {
				frames++
				if _, c := k.plan(uint32(i), uint32(n)); c > 0 {
					chunks++
				}
			}
		}
	}
	return frames, chunks
}

// TestPlayersCountsEveryReply runs the players workload straight to the
// backend and through the tidegate proxy: every frame scheduled in the
// measured interval has exactly one round trip, the chunk replies among
// them are the chunk requests scheduled, and the figures are filled in.
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
	frames, chunks := scheduled(p)
	if frames != int64(p.Sessions*p.Rate)*int64(p.Duration/time.Second) || chunks == 0 {
		t.Fatalf("schedule: %d frames, %d chunks", frames, chunks)
	}
	for _, ph := range res.Phases {
		pl := ph.Players
		if ph.Roundtrips != frames || pl.ChunkReplies != chunks {
			t.Errorf("%s: %d round trips, %d chunk replies; want %d and %d", ph.Kind, ph.Roundtrips, pl.ChunkReplies, frames, chunks)
		}
		// The counters are read at moments near the interval's edges, not
		// on the schedule: within a few percent of it.
		for what, n := range map[string]int64{"sent": pl.SentFrames, "received": pl.ReceivedFrames} {
			if n < frames*9/10 || n > frames*11/10 {
				t.Errorf("%s: %d frames %s in the interval, want about %d (interval %.3fs, send late max %.1fms p99 %.1fms, p999 %.1fms)", ph.Kind, n, what, frames, ph.Seconds, pl.SendLateMaxMs, pl.SendLateP99Ms, ph.P999Ms)
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

func TestPlayersCodecRoundTrip(t *testing.T) {
	p := smallPlayers
	k := newPlayersCodec(p)
	var chunks int
	for seq := uint32(0); seq < 200; seq++ {
		const session = 3
		f := k.appendFrame(nil, session, seq, int64(seq)*1000+5)
		n, h, err := mc.SplitFrame(f, mc.MaxFrameLength)
		if err != nil || n != len(f) {
			t.Fatalf("frame %d: split %d of %d, %v", seq, n, len(f), err)
		}
		body := f[h:]
		size, chunk := k.plan(session, seq)
		if len(body) != size || size < p.FrameMin || size > p.FrameMax {
			t.Fatalf("frame %d: body %d bytes, plan %d, bounds %d..%d", seq, len(body), size, p.FrameMin, p.FrameMax)
		}
		reply := body // what the backend echoes
		if chunk > 0 {
			chunks++
			if chunk < p.ChunkMin || chunk > p.ChunkMax {
				t.Fatalf("frame %d: chunk of %d bytes", seq, chunk)
			}
			reply = mcbackend.AppendChunkFiller(append([]byte(nil), body...), len(body), chunk)
		}
		sess, s, sent, ok := replyFields(reply)
		if !ok || sess != session || s != seq || sent != int64(seq)*1000+5 {
			t.Fatalf("frame %d: fields %d %d %d %v", seq, sess, s, sent, ok)
		}
		if _, _, err := k.verify(reply, session, seq, sent, nil); err != nil {
			t.Fatalf("frame %d: %v", seq, err)
		}
		// A flipped byte fails, read the way the reader reads it (with the
		// fields the reply says it has): each of the header, fields and
		// first filler bytes, one in the middle and the last.
		for _, at := range append(rangeTo(min(len(reply), 64)), len(reply)/2, len(reply)-1) {
			bad := bytes.Clone(reply)
			bad[at] ^= 0x20
			if s2, q2, t2, ok := replyFields(bad); ok {
				if _, _, err := k.verify(bad, s2, q2, t2, nil); err == nil {
					t.Fatalf("frame %d: a flipped byte %d passed", seq, at)
				}
			}
		}
		if _, _, err := k.verify(reply[:len(reply)-1], session, seq, sent, nil); err == nil {
			t.Fatalf("frame %d: a short reply passed", seq)
		}
	}
	if chunks != 200/p.ChunkEvery {
		t.Fatalf("%d chunk requests in 200 frames, want %d", chunks, 200/p.ChunkEvery)
	}
}

// rangeTo returns 0..n-1.
func rangeTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func TestPlayersParamsChecks(t *testing.T) {
	if err := DefaultPlayers.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(*PlayersParams)
		want string
	}{
		{func(p *PlayersParams) { p.FrameMin = 20 }, "frame sizes"},
		{func(p *PlayersParams) { p.ChunkMin = 100 }, "chunk sizes"},
		{func(p *PlayersParams) { p.Rate = 0 }, "rate"},
		{func(p *PlayersParams) { p.SendTick = 0 }, "send tick"},
		{func(p *PlayersParams) { p.Drain = 0 }, "drain"},
	} {
		p := DefaultPlayers
		tc.edit(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error about %s", p, err, tc.want)
		}
	}
	p := DefaultPlayers
	p.ChunkEvery, p.ChunkMin = 0, 0 // no chunks: their sizes do not matter
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
	// 20,000 descriptors a process, as on the machine this was written on.
	for n, fits := range map[int]bool{5000: true, 9648: true, 9649: false} {
		err := CheckPlayersDescriptors(n, 20000)
		if (err == nil) != fits || (!fits && !strings.Contains(err.Error(), "at most 9648 sessions")) {
			t.Errorf("%d sessions in 20000 descriptors: %v", n, err)
		}
	}
}

// TestPlayersSummaryAndReport builds a players result by hand: the added
// latency pairs phases by repeat, CPU is compared with the best other peer,
// the goals say met or missed, and the report has its tables and charts.
func TestPlayersSummaryAndReport(t *testing.T) {
	p := DefaultPlayers
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
