package players

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/internal/testkit/leaktest"
	"github.com/tidegate/tidegate/internal/testkit/testproxy"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// TestMain fails the run when the tests leave goroutines running or
// descriptors open: a players phase opens and closes hundreds of each.
func TestMain(m *testing.M) { os.Exit(leaktest.MainFDs(m)) }

// smallPlayers is a players workload that runs in about two seconds a phase.
var smallPlayers = Params{Sessions: 20, Rate: 50, Warmup: 300 * time.Millisecond, Duration: time.Second,
	Drain: 2 * time.Second, FrameMin: 60, FrameMax: 200, ChunkEvery: 5, ChunkMin: 8 << 10, ChunkMax: 32 << 10,
	Seed: 7, Senders: 2, SendTick: time.Millisecond}

// startChunkBackend runs the fake backend in-process on one loop,
// answering chunk requests, as the players workload starts it.
func startChunkBackend(t *testing.T) string {
	t.Helper()
	_, addr := testserver.MCBackend(t, mcbackend.Config{ChunkReplies: true, Reactor: reactor.Config{Logger: zerolog.Nop()}})
	return addr
}

// startProxy runs the tidegate proxy in-process in front of backend.
func startProxy(t *testing.T, backend string) string {
	t.Helper()
	return testproxy.Start(t, peers.TidegateConfig(peers.RelayConfig{
		Listen: "127.0.0.1:0", Backend: backend, Cores: 1, Sessions: 16}, false))
}

// scheduled returns how many frames p schedules in the measured interval,
// and how many of them are chunk requests: frame n of session i is due at
// n×period + i×period/sessions after the first send, and the interval
// runs from Warmup to Warmup+Duration after it.
func scheduled(p Params) (frames, chunks int64) {
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

// TestCountsEveryReply runs a phase straight to the backend and one
// through the tidegate proxy: every frame scheduled in the measured
// interval has exactly one round trip, the chunk replies among them are the
// chunk requests scheduled, and the figures are plausible.
func TestCountsEveryReply(t *testing.T) {
	backend := startChunkBackend(t)
	p := smallPlayers
	frames, chunks := scheduled(p)
	if frames != int64(p.Sessions*p.Rate)*int64(p.Duration/time.Second) || chunks == 0 {
		t.Fatalf("schedule: %d frames, %d chunks", frames, chunks)
	}
	for name, addr := range map[string]string{"direct": backend, "proxy": startProxy(t, backend)} {
		m, err := Run(context.Background(), addr, p, 20*time.Second, harness.PhaseHooks{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m.Errors() != 0 {
			t.Errorf("%s: %d wrong replies: %q", name, m.Errors(), m.Samples)
		}
		if m.Hist.TotalCount() != frames || m.Chunks != chunks {
			t.Errorf("%s: %d round trips, %d chunk replies; want %d and %d", name, m.Hist.TotalCount(), m.Chunks, frames, chunks)
		}
		// The counters are read at moments near the interval's edges, not
		// on the schedule: within a few percent of it.
		for what, n := range map[string]int64{"sent": m.Sent, "received": m.Received} {
			if n < frames*9/10 || n > frames*11/10 {
				t.Errorf("%s: %d frames %s in the interval, want about %d", name, n, what, frames)
			}
		}
		p50, p99, p999 := m.Hist.ValueAtQuantile(50), m.Hist.ValueAtQuantile(99), m.Hist.ValueAtQuantile(99.9)
		if p50 <= 0 || p50 > p99 || p99 > p999 || m.ReceivedBytes <= m.SentBytes || float64(m.Late.Max()) < m.Late.Mean() ||
			m.GeneratorCPU <= 0 || m.Login <= 0 || m.Elapsed < p.Duration/2 {
			t.Errorf("%s: implausible figures %+v", name, m)
		}
	}
}

func TestCodecRoundTrip(t *testing.T) {
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
		sess, s, sent, ok := k.replyFields(reply)
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
			if s2, q2, t2, ok := k.replyFields(bad); ok {
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

func TestParamsChecks(t *testing.T) {
	if err := Default.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(*Params)
		want string
	}{
		{func(p *Params) { p.FrameMin = 20 }, "frame sizes"},
		{func(p *Params) { p.ChunkMin = 100 }, "chunk sizes"},
		{func(p *Params) { p.Rate = 0 }, "rate"},
		{func(p *Params) { p.SendTick = 0 }, "send tick"},
		{func(p *Params) { p.Drain = 0 }, "drain"},
	} {
		p := Default
		tc.edit(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error about %s", p, err, tc.want)
		}
	}
	p := Default
	p.ChunkEvery, p.ChunkMin = 0, 0 // no chunks: their sizes do not matter
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
	// 20,000 descriptors a process, as on the machine this was written on.
	for n, fits := range map[int]bool{5000: true, 9648: true, 9649: false} {
		err := CheckDescriptors(n, 20000)
		if (err == nil) != fits || (!fits && !strings.Contains(err.Error(), "at most 9648 sessions")) {
			t.Errorf("%d sessions in 20000 descriptors: %v", n, err)
		}
	}
}
