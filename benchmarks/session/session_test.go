package session

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/mcclient"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/internal/testkit/testproxy"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// startBackend runs the fake Minecraft backend in-process.
func startBackend(t *testing.T) string {
	t.Helper()
	return startDelayedBackend(t, 0)
}

// startDelayedBackend runs the fake backend in-process holding every echo
// for hold, as tidegate backend --reply-delay does (0: none).
func startDelayedBackend(t *testing.T, hold time.Duration) string {
	t.Helper()
	return startBackendWith(t, mcbackend.Config{ReplyDelay: hold})
}

// startChunkBackend runs the fake backend in-process answering chunk
// requests, as the players workload starts it.
func startChunkBackend(t *testing.T) string {
	t.Helper()
	return startBackendWith(t, mcbackend.Config{ChunkReplies: true})
}

// startBackendWith runs the fake backend in-process with cfg on one loop.
func startBackendWith(t *testing.T, cfg mcbackend.Config) string {
	t.Helper()
	cfg.Reactor = reactor.Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1, Logger: zerolog.Nop()}
	be, err := mcbackend.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		be.Stop(ctx)
	})
	a, err := be.Addr(0)
	if err != nil {
		t.Fatal(err)
	}
	return a.String()
}

// startProxy runs the tidegate proxy in-process with the configuration the
// benchmark writes for its own process.
func startProxy(t *testing.T, backend string, raw bool) string {
	t.Helper()
	return testproxy.Start(t, peers.TidegateConfig(peers.RelayConfig{
		Listen: "127.0.0.1:0", Backend: backend, Cores: 1, Sessions: 16}, raw))
}

// flipRelay relays to backend and flips one byte of the backend's output at
// offset flipAt of each connection's stream (after login): a corrupting proxy.
func flipRelay(t *testing.T, backend string, flipAt int) string {
	t.Helper()
	return filterRelay(t, backend, func(int) func([]byte) []byte {
		off := 0
		return func(p []byte) []byte {
			if i := flipAt - off; i >= 0 && i < len(p) {
				p[i] ^= 0x40
			}
			off += len(p)
			return p
		}
	})
}

// filterRelay relays to backend, passing what the backend sends on the
// conn-th accepted connection (from 0) through the filter newFilter(conn)
// returns: it gets each read's bytes (which it may change) and returns the
// bytes to write to the client.
func filterRelay(t *testing.T, backend string, newFilter func(conn int) func([]byte) []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, b)
			mu.Unlock()
			filter := newFilter(n)
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(b, c); b.Close() }()
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := b.Read(buf)
					if n > 0 {
						if _, werr := c.Write(filter(buf[:n])); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

var tiny = Params{Connections: 3, Messages: 200, Warmup: 20, Payload: 64, Window: 4, Burst: 3}

func TestRunDirectAndProxyCountsExact(t *testing.T) {
	backend := startBackend(t)
	targets := []Target{
		{Name: "tidegate", Addr: startProxy(t, backend, false)},
		{Name: "tidegate-raw", Addr: startProxy(t, backend, true)},
	}
	res, err := Run(context.Background(), Config{Params: tiny, Repeats: 2, Backend: backend, Targets: targets, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Fatalf("errors %d, failed %d: %+v", res.Errors, res.Failed, res.Phases)
	}
	if got, want := len(res.Phases), 2*2*2; got != want {
		t.Fatalf("%d phases, want %d", got, want)
	}
	// Repeat 0 runs direct first, repeat 1 proxy first, and targets rotate.
	wantOrder := []string{"tidegate direct", "tidegate proxy", "tidegate-raw direct", "tidegate-raw proxy",
		"tidegate-raw proxy", "tidegate-raw direct", "tidegate proxy", "tidegate direct"}
	for i, p := range res.Phases {
		if got := p.Target + " " + p.Kind; got != wantOrder[i] {
			t.Errorf("phase %d is %q, want %q", i, got, wantOrder[i])
		}
		// Roundtrips is counted echo by echo: every measured echo arrived,
		// none was counted twice, and the warmup is not in it.
		if p.Roundtrips != int64(tiny.Connections*tiny.Messages) {
			t.Errorf("phase %d: %d roundtrips, want %d", i, p.Roundtrips, tiny.Connections*tiny.Messages)
		}
		if p.RoundtripsPerSec <= 0 || p.P99Ms <= 0 || p.P50Ms > p.P99Ms {
			t.Errorf("phase %d: implausible figures %+v", i, p)
		}
	}
	for _, s := range res.Summary {
		if s.Ratio.N != 2 || s.Direct.Phases != 2 || s.Proxy.Phases != 2 {
			t.Errorf("%s: summary %+v", s.Target, s)
		}
	}
}

func TestCorruptedEchoIsCounted(t *testing.T) {
	backend := startBackend(t)
	p := Params{Connections: 1, Messages: 50, Warmup: 0, Payload: 100, Window: 1, Burst: 1}
	// Login Success for "bench0" at protocol 5 is 3+36+1+6 = 46 bytes framed
	// (length 45); byte 46+50 is inside the filler of the first echo.
	bad := flipRelay(t, backend, 46+50)
	res, err := Run(context.Background(), Config{Params: p, Repeats: 1, Backend: backend,
		Targets: []Target{{Name: "flipper", Addr: bad}}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() {
		t.Fatal("a relay that flips a byte passed")
	}
	var proxyPhase *Phase
	for i := range res.Phases {
		if res.Phases[i].Kind == KindProxy {
			proxyPhase = &res.Phases[i]
		} else if res.Phases[i].Errors != 0 {
			t.Errorf("direct phase has %d errors", res.Phases[i].Errors)
		}
	}
	if proxyPhase.Errors != 1 || proxyPhase.Failure != "" {
		t.Fatalf("proxy phase: errors %d failure %q, want 1 error and no failure", proxyPhase.Errors, proxyPhase.Failure)
	}
	if len(proxyPhase.ErrorSamples) != 1 || !strings.Contains(proxyPhase.ErrorSamples[0], "payload byte") {
		t.Fatalf("error samples %q", proxyPhase.ErrorSamples)
	}
}

func TestBrokenFramingFailsThePhase(t *testing.T) {
	backend := startBackend(t)
	p := Params{Connections: 1, Messages: 20, Warmup: 0, Payload: 100, Window: 1, Burst: 1}
	bad := flipRelay(t, backend, 46) // the first echo's length prefix
	res, err := Run(context.Background(), Config{Params: p, Repeats: 1, Backend: backend,
		Targets: []Target{{Name: "flipper", Addr: bad}}, StallTimeout: 2 * time.Second, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 1 || res.OK() {
		t.Fatalf("failed phases %d, want 1: %+v", res.Failed, res.Phases)
	}
}

func TestLoginDisconnectIsReported(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 256)
		c.Read(buf)
		// Login Disconnect {"text":"Server is full"}
		msg := `{"text":"Server is full"}`
		frame := append([]byte{byte(2 + len(msg)), 0x00, byte(len(msg))}, msg...)
		c.Write(frame)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = mcclient.Login(c, "localhost", 25565, "someone", nil, time.Now().Add(5*time.Second))
	var le *mcclient.LoginError
	if !errors.As(err, &le) || le.Reason != "disconnect" || le.Message != "Server is full" {
		t.Fatalf("login error %v, want a disconnect with the server's text", err)
	}
	<-done
}

func TestPresetsMatchTheDocuments(t *testing.T) {
	want := map[string]string{
		"burst32": "--connections 4 --messages 6000 --warmup 600 --payload 32 --window 4 --burst 32",
		"w1":      "--connections 4 --messages 5000 --warmup 500 --payload 1024 --window 1 --burst 1",
		"w16":     "--connections 4 --messages 5000 --warmup 500 --payload 1024 --window 16 --burst 1",
		"seed001": "--connections 4 --messages 10000 --warmup 1000 --payload 4096 --window 16 --burst 1",
	}
	for name, flags := range want {
		p, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if p.String() != flags {
			t.Errorf("%s: %s, want %s", name, p, flags)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Preset("w2"); err == nil {
		t.Error("unknown preset accepted")
	}
}

func TestValidateRefusesTooMuchInFlight(t *testing.T) {
	p := Params{Connections: 1, Messages: 1, Payload: 64 << 10, Window: 64, Burst: 1}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "in flight") {
		t.Fatalf("validate: %v", err)
	}
}

func TestCodecRoundTrip(t *testing.T) {
	k := newCodec(40)
	f := k.appendFrame(nil, 7, 12345)
	if len(f) != k.frameLen {
		t.Fatalf("frame is %d bytes, want %d", len(f), k.frameLen)
	}
	if err := k.check(f, 7, 12345); err != nil {
		t.Fatal(err)
	}
	if err := k.check(f, 7, 12346); err == nil {
		t.Fatal("wrong sequence accepted")
	}
	if err := k.check(f, 8, 12345); err == nil {
		t.Fatal("wrong connection accepted")
	}
	f[len(f)-1] ^= 1
	if err := k.check(f, 7, 12345); err == nil {
		t.Fatal("corrupted payload accepted")
	}
}

// TestSummaryLeavesOutPhasesWithErrors: a phase with a wrong echo or a
// failure is counted but none of its figures enters a median, and the
// syscall passes give a median over the passes.
func TestSummaryLeavesOutPhasesWithErrors(t *testing.T) {
	r := &Result{Repeats: 3, Targets: []string{"a"}}
	v := func(x float64) *float64 { return &x }
	for rep := 0; rep < 3; rep++ {
		proxy := Phase{Target: "a", Kind: KindProxy, Repeat: rep, Roundtrips: 10, FramesPerSec: 1000, RoundtripsPerSec: 500,
			P99Ms: 1, CPUNsPerFrame: v(100 * float64(rep+1)), RSSMiB: v(10)}
		if rep == 1 { // wrong echoes: figures that must not count
			proxy.Errors, proxy.FramesPerSec, proxy.RoundtripsPerSec, proxy.CPUNsPerFrame = 2, 99999, 99999, v(1e9)
		}
		r.Phases = append(r.Phases, Phase{Target: "a", Kind: KindDirect, Repeat: rep, Roundtrips: 10, FramesPerSec: 2000,
			RoundtripsPerSec: 1000, P99Ms: 1}, proxy)
	}
	r.Phases = append(r.Phases, Phase{Target: "a", Kind: KindDirect, Repeat: 3, Failure: "stalled"})
	for pass, n := range []float64{4, 2, 9} {
		r.Phases = append(r.Phases, Phase{Target: "a", Kind: KindSyscalls, Repeat: pass, SyscallsPerFrame: v(n)})
	}
	r.Phases = append(r.Phases, Phase{Target: "a", Kind: KindSyscalls, Repeat: 3, Errors: 1, SyscallsPerFrame: v(1000)})
	r.summarize()
	s := r.Summary[0]
	if r.Errors != 3 || r.Failed != 1 || r.OK() {
		t.Fatalf("errors %d failed %d", r.Errors, r.Failed)
	}
	if s.Proxy.Phases != 3 || s.Proxy.Errors != 2 || s.Proxy.RoundtripsPerSec.N != 2 || s.Proxy.RoundtripsPerSec.Max != 500 {
		t.Fatalf("proxy stats %+v: the phase with wrong echoes entered the median", s.Proxy)
	}
	if s.Direct.Failed != 1 || s.Direct.RoundtripsPerSec.N != 3 {
		t.Fatalf("direct stats %+v", s.Direct)
	}
	if s.CPUNsPerFrame != (harness.Spread{Median: 200, Min: 100, Max: 300, N: 2}) || s.Ratio.N != 2 || s.Ratio.Max != 0.5 {
		t.Fatalf("cpu %+v ratio %+v", s.CPUNsPerFrame, s.Ratio)
	}
	if s.SyscallsPerFrame != (harness.Spread{Median: 4, Min: 2, Max: 9, N: 3}) {
		t.Fatalf("syscalls %+v, want the median of three passes", s.SyscallsPerFrame)
	}
}

func TestReportWritesTableJSONAndCharts(t *testing.T) {
	r := &Result{Workload: "w1", Params: Presets["w1"], Repeats: 2, Targets: []string{"a", "b"}}
	cpu := func(v float64) *float64 { return &v }
	for i, t := range r.Targets {
		for rep := 0; rep < 2; rep++ {
			r.Phases = append(r.Phases,
				Phase{Target: t, Kind: KindDirect, Repeat: rep, Roundtrips: 10, RoundtripsPerSec: 1000, FramesPerSec: 2000, P99Ms: 1},
				Phase{Target: t, Kind: KindProxy, Repeat: rep, Roundtrips: 10, RoundtripsPerSec: 500 * float64(i+1),
					FramesPerSec: 1000 * float64(i+1), P99Ms: 2, CPUNsPerFrame: cpu(float64(1000 * (rep + 1)))})
		}
	}
	r.summarize()
	if got := r.Summary[1].Ratio; got.Median != 1 || got.N != 2 {
		t.Fatalf("ratio of b: %+v, want 1 over 2 pairs", got)
	}
	if got := r.Summary[0].CPUNsPerFrame; got.Median != 1500 || got.Min != 1000 || got.Max != 2000 {
		t.Fatalf("cpu of a: %+v", got)
	}
	var sb strings.Builder
	WriteTable(&sb, r)
	if !strings.Contains(sb.String(), "0.500") || !strings.Contains(sb.String(), "1500 [1000–2000]") {
		t.Fatalf("table:\n%s", sb.String())
	}
	dir := t.TempDir()
	if err := WriteReport(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.md", "result.json", "cpu_ns_per_frame.png", "roundtrips.png", "ratio.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("report file %s: %v", f, err)
		}
	}
	// A host without a revision is named as such, not "custom".
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "revision unknown (no revision stamp") || strings.Contains(string(md), "revision custom") {
		t.Errorf("report.md does not say the revision is unknown:\n%s", md)
	}
	r.Setup.Host.Revision = "v1.2-3-gabc"
	if err := WriteReport(dir, r); err != nil {
		t.Fatal(err)
	}
	if md, _ = os.ReadFile(filepath.Join(dir, "report.md")); !strings.Contains(string(md), "revision v1.2-3-gabc.") {
		t.Errorf("report.md does not name revision v1.2-3-gabc:\n%s", md)
	}
}

// TestAppRTTHoldsEveryRoundtrip runs a windowed workload with the RTT
// emulated by client and backend: every echo is still checked and counted,
// and no roundtrip is shorter than the RTT (lower bounds only: a loaded
// machine is late, never early).
func TestAppRTTHoldsEveryRoundtrip(t *testing.T) {
	const rtt = 4 * time.Millisecond
	backend := startDelayedBackend(t, rtt/2)
	targets := []Target{{Name: "tidegate", Addr: startProxy(t, backend, false)}}
	p := Params{Connections: 2, Messages: 200, Warmup: 20, Payload: 100, Window: 8, Burst: 2}
	res, err := Run(context.Background(), Config{Params: p, Repeats: 1, Backend: backend, Targets: targets,
		AppRTT: rtt, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Fatalf("errors %d, failed %d: %+v", res.Errors, res.Failed, res.Phases)
	}
	for _, ph := range res.Phases {
		if ph.Roundtrips != int64(p.Connections*p.Messages) {
			t.Errorf("%s %s: %d roundtrips, want %d", ph.Target, ph.Kind, ph.Roundtrips, p.Connections*p.Messages)
		}
		if ph.P50Ms < float64(rtt)/1e6 {
			t.Errorf("%s %s: p50 %.3f ms, below the emulated RTT %v", ph.Target, ph.Kind, ph.P50Ms, rtt)
		}
		if ph.HoldLateUs == nil || *ph.HoldLateUs < 0 {
			t.Errorf("%s %s: no hold lateness %v: the bursts were not held", ph.Target, ph.Kind, ph.HoldLateUs)
		}
		// Window 8 bursts over at least 4 ms: at most 2 connections × 8 × 2
		// packets per 4 ms, however fast the machine.
		if limit := float64(p.Connections*p.Window*p.Burst) / rtt.Seconds(); ph.RoundtripsPerSec > limit*1.01 {
			t.Errorf("%s %s: %.0f roundtrips/s beats the window limit %.0f", ph.Target, ph.Kind, ph.RoundtripsPerSec, limit)
		}
	}
	if len(res.Notes) == 0 || !strings.Contains(strings.Join(res.Notes, " "), "app RTT 4ms") {
		t.Errorf("notes %q do not name the app RTT", res.Notes)
	}
}

// TestNoAppRTTWritesDirectly checks that without --app-rtt a client has no
// holder and a phase reports no hold: the path without the emulated RTT is
// the one measured before it existed.
func TestNoAppRTTWritesDirectly(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c, err := newClient(0, a, newCodec(tiny.Payload), tiny, time.Now(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.hold != nil {
		t.Fatal("a client without a hold has a writer")
	}
	backend := startBackend(t)
	res, err := Run(context.Background(), Config{Params: tiny, Repeats: 1, Backend: backend,
		Targets: []Target{{Name: "tidegate", Addr: startProxy(t, backend, false)}}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	for _, ph := range res.Phases {
		if ph.HoldLateUs != nil {
			t.Errorf("%s %s: hold lateness %v without --app-rtt", ph.Target, ph.Kind, *ph.HoldLateUs)
		}
	}
	if res.Setup.AppRTT != "" || len(res.Notes) != 0 {
		t.Errorf("setup %+v, notes %q without --app-rtt", res.Setup, res.Notes)
	}
}
