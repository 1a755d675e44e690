package rps

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/benchmarks/goserver"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/protocol/tlv"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/tlvserver"

	"github.com/rs/zerolog"
)

func testLogger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

func startTidegate(t *testing.T) string {
	t.Helper()
	srv, err := tlvserver.New(tlvserver.Config{Reactor: reactor.Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 2, Logger: testLogger(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stopping tidegate server: %v", err)
		}
	})
	return srv.Addr().String()
}

func startGoserver(t *testing.T) string {
	t.Helper()
	srv, err := goserver.New(goserver.Config{Addr: "127.0.0.1:0", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stopping goroutine server: %v", err)
		}
	})
	return srv.Addr().String()
}

// echoFrames echoes frames, letting mutate change each response (numbered
// from 0 on this connection) before it is written; mutate returns false to
// close the connection after writing.
func echoFrames(c net.Conn, mutate func(i int, frame []byte) bool) {
	f := tlv.DefaultFormat
	r := bufio.NewReader(c)
	hdr := make([]byte, f.HeaderLen())
	for i := 0; ; i++ {
		if _, err := io.ReadFull(r, hdr); err != nil {
			return
		}
		_, n, err := f.Decode(hdr)
		if err != nil {
			return
		}
		frame := make([]byte, n)
		copy(frame, hdr)
		if _, err := io.ReadFull(r, frame[len(hdr):]); err != nil {
			return
		}
		keep := mutate(i, frame)
		if _, err := c.Write(frame); err != nil || !keep {
			return
		}
	}
}

func baseConfig(t *testing.T, addr string) Config {
	return Config{Addr: addr, Clients: 3, Payloads: 150, Warmups: 1, Loops: 2, Timeout: 5 * time.Second, Logger: testLogger(t)}
}

func checkClean(t *testing.T, res Result, cfg Config) {
	t.Helper()
	want := int64(cfg.Clients * cfg.Payloads)
	if res.Successes != want || res.Requests != want || res.Errors != 0 || res.Timeouts != 0 || res.Reconnects != 0 {
		t.Fatalf("got %d successes of %d requests, %d errors, %d timeouts, %d reconnects; want %d clean",
			res.Successes, res.Requests, res.Errors, res.Timeouts, res.Reconnects, want)
	}
	if res.RPS <= 0 || res.WallSeconds <= 0 || res.P50Ms <= 0 && res.AvgMs <= 0 {
		t.Fatalf("implausible timing: %+v", res)
	}
	if res.PerClientRPS.Min <= 0 || res.PerClientRPS.Max < res.PerClientRPS.Median {
		t.Fatalf("implausible per-client spread %+v", res.PerClientRPS)
	}
}

func TestRunCleanAgainstBothServers(t *testing.T) {
	servers := map[string]func(*testing.T) string{"tidegate": startTidegate, "goroutine": startGoserver}
	for name, start := range servers {
		addr := start(t)
		for _, tc := range []struct{ size, pipeline int }{{0, 1}, {5, 1}, {64, 8}, {3000, 4}, {70000, 3}} {
			t.Run(fmt.Sprintf("%s/size%d/pipeline%d", name, tc.size, tc.pipeline), func(t *testing.T) {
				cfg := baseConfig(t, addr)
				cfg.PayloadSize, cfg.Pipeline = tc.size, tc.pipeline
				if tc.size > 64<<10 {
					cfg.Payloads = 10 // frames larger than one read: few are enough
				}
				if tc.size == 0 {
					cfg.PayloadSize = 1 // 0 selects the default; 1 is the smallest body
				}
				res, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				checkClean(t, res, cfg)
			})
		}
	}
}

func TestCorruptBodyCountedAsError(t *testing.T) {
	// Every fifth response has its last byte flipped: those requests fail,
	// the stream stays usable, the rest succeed.
	addr := testserver.Conns(t, func(c net.Conn) {
		echoFrames(c, func(i int, frame []byte) bool {
			if i%5 == 2 {
				frame[len(frame)-1] ^= 0x01
			}
			return true
		})
	})
	cfg := baseConfig(t, addr)
	cfg.Payloads, cfg.Pipeline, cfg.Warmups = 20, 3, 0
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	wantErr := int64(cfg.Clients * 4)
	if res.Errors != wantErr || res.Successes != int64(cfg.Clients*20)-wantErr || res.Timeouts != 0 || res.Reconnects != 0 {
		t.Fatalf("got %+v; want %d errors, no timeouts or reconnects", res, wantErr)
	}
	if res.Failure() == nil {
		t.Fatal("a run with errored requests has no Failure")
	}
}

func TestCorruptHeaderClosesAndReconnects(t *testing.T) {
	// The fourth response of each connection carries a wrong type: that
	// request fails, the connection is dropped, the client reconnects.
	addr := testserver.Conns(t, func(c net.Conn) {
		echoFrames(c, func(i int, frame []byte) bool {
			if i == 3 {
				frame[0] ^= 0x01
			}
			return true
		})
	})
	cfg := baseConfig(t, addr)
	cfg.Payloads, cfg.Pipeline, cfg.Warmups = 20, 1, 0
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(cfg.Clients)
	if res.Successes != 15*n || res.Errors != 5*n || res.Reconnects != 4*n || res.Timeouts != 0 || res.Requests != 20*n {
		t.Fatalf("got %+v; want per client 15 successes, 5 errors, 4 reconnects", res)
	}
}

func TestErrorFrameCountedAsError(t *testing.T) {
	// A server that answers the first request with an error frame and
	// closes: every client's requests fail one by one across reconnects.
	addr := testserver.Conns(t, func(c net.Conn) {
		hdr := make([]byte, 5)
		if _, err := io.ReadFull(c, hdr); err != nil {
			return
		}
		_, _ = c.Write(tlv.DefaultFormat.AppendError(nil, "no"))
	})
	cfg := baseConfig(t, addr)
	cfg.Payloads, cfg.Warmups = 4, 0
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Successes != 0 || res.Errors != int64(cfg.Clients*4) || res.Timeouts != 0 {
		t.Fatalf("got %+v; want every request an error", res)
	}
}

func TestSilentServerCountsTimeouts(t *testing.T) {
	addr := testserver.Conns(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	cfg := baseConfig(t, addr)
	cfg.Clients, cfg.Payloads, cfg.Pipeline, cfg.Warmups, cfg.Timeout = 2, 3, 2, 0, 50*time.Millisecond
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Timeouts != 6 || res.Successes != 0 || res.Errors != 0 || res.Requests != 6 {
		t.Fatalf("got %+v; want 6 timeouts", res)
	}
	// Two timeout periods one after the other (the client reconnects after
	// the first); a request times out on the wall clock, never early, so
	// the lower bound holds under load, and 5 s is 50 periods.
	if d := time.Since(start); d < 100*time.Millisecond || d > 5*time.Second {
		t.Fatalf("run took %v; want two timeout periods", d)
	}
}

func TestUnreachableServerFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cfg := baseConfig(t, addr)
	cfg.DialTimeout = time.Second
	if _, err := Run(context.Background(), cfg); err == nil {
		t.Fatal("Run against a closed port succeeded")
	}
}

func TestRunHonoursContext(t *testing.T) {
	addr := testserver.Conns(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	cfg := baseConfig(t, addr)
	cfg.Warmups, cfg.Timeout = 0, time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, cfg)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v; want the context's deadline error", err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"no addr", func(c *Config) { c.Addr = "" }},
		{"no clients", func(c *Config) { c.Clients = 0 }},
		{"no payloads", func(c *Config) { c.Payloads = 0 }},
		{"negative warmups", func(c *Config) { c.Warmups = -1 }},
		{"negative pipeline", func(c *Config) { c.Pipeline = -1 }},
		{"body too large", func(c *Config) { c.PayloadSize = tlv.DefaultFormat.MaxBody + 1 }},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Addr: "127.0.0.1:1", Clients: 1, Payloads: 1}
			tc.mod(&cfg)
			if _, err := Run(context.Background(), cfg); err == nil {
				t.Fatal("invalid config accepted")
			}
		})
	}
}

func TestPayloadsCatchEveryChangedByte(t *testing.T) {
	f := tlv.DefaultFormat
	for _, size := range []int{1, 7, 8, 9, 300} {
		p := newPayloads(f, 3, size)
		for _, seq := range []int{0, 1, 126, 127, 250, 251, 100000} {
			frame := p.appendRequest(nil, seq)
			h, n, err := f.Decode(frame)
			if err != nil || n != len(frame) {
				t.Fatalf("size %d seq %d: decode n=%d err=%v", size, seq, n, err)
			}
			body := frame[f.HeaderLen():]
			if v := p.check(h, body, seq); v != responseOK {
				t.Fatalf("size %d seq %d: own request checked as %d", size, seq, v)
			}
			if v := p.check(h, body, seq+1); v == responseOK {
				t.Fatalf("size %d seq %d: accepted as seq+1", size, seq)
			}
			for i := range body {
				body[i] ^= 0x40
				if v := p.check(h, body, seq); v != responseBadBody {
					t.Fatalf("size %d seq %d: flipped byte %d checked as %d", size, seq, i, v)
				}
				body[i] ^= 0x40
			}
			bad := h
			bad.KeepAlive = false
			if v := p.check(bad, body, seq); v != responseBadHeader {
				t.Fatalf("size %d seq %d: missing keep-alive checked as %d", size, seq, v)
			}
		}
		other := newPayloads(f, 4, size)
		frame := other.appendRequest(nil, 5)
		h, _, _ := f.Decode(frame)
		if v := p.check(h, frame[f.HeaderLen():], 5); v == responseOK {
			t.Fatalf("size %d: another client's request accepted", size)
		}
	}
}

// TestRequestsAreFrames checks that every request is the frame
// Format.AppendFrame makes of its type, the keep-alive bit and its body, for
// every message type, short bodies (whose frames are shorter than the 8-byte
// header store) and long ones, appended after other bytes.
func TestRequestsAreFrames(t *testing.T) {
	for _, f := range []tlv.Format{tlv.DefaultFormat, {TypeWidth: 2, LengthWidth: 2, MaxBody: 1000}, {TypeWidth: 1, LengthWidth: 2, MaxBody: 1000}} {
		for _, size := range []int{0, 1, 3, 4, 5, 8, 300} {
			p := newPayloads(f, 7, size)
			for seq := range 2*127 + 1 {
				dst := bytes.Repeat([]byte{0xEE}, 3)
				got := p.appendRequest(dst, seq)
				body := got[3+f.HeaderLen():]
				want := f.AppendFrame(bytes.Repeat([]byte{0xEE}, 3), tlv.Header{Type: uint16(seq % 127), KeepAlive: true}, body)
				if !bytes.Equal(got, want) || len(body) != size {
					t.Fatalf("%+v size %d seq %d: request % x, want % x", f, size, seq, got, want)
				}
			}
		}
	}
}

// TestOwnFrameIsCheck checks that comparing a whole response with its
// request's frame, as OnTraffic does, accepts exactly what decoding and
// check accept: the request's own frame, and no frame with any one byte
// changed or of another request.
func TestOwnFrameIsCheck(t *testing.T) {
	for _, f := range []tlv.Format{tlv.DefaultFormat, {TypeWidth: 2, LengthWidth: 2, MaxBody: 1000}} {
		for _, size := range []int{1, 7, 8, 9, 16, 300} {
			p := newPayloads(f, 3, size)
			verdict := func(frame []byte, seq int) verdict {
				h, n, err := f.Decode(frame)
				if err != nil || n != len(frame) {
					return responseBadHeader
				}
				return p.check(h, frame[f.HeaderLen():], seq)
			}
			for _, seq := range []int{0, 1, 126, 127, 250, 251, 31877, 100000} {
				frame := p.appendRequest(nil, seq)
				if len(frame) != p.frameSize {
					t.Fatalf("%+v size %d: frame of %d bytes, want %d", f, size, len(frame), p.frameSize)
				}
				matches := func(frame []byte, seq int) bool { return bytes.Equal(frame, p.appendRequest(nil, seq)) }
				if !matches(frame, seq) || verdict(frame, seq) != responseOK {
					t.Fatalf("%+v size %d seq %d: own request not accepted", f, size, seq)
				}
				if matches(frame, seq+1) || matches(frame, seq+127*251) {
					t.Fatalf("%+v size %d seq %d: accepted as another request", f, size, seq)
				}
				for i := range frame {
					for _, bit := range []byte{0x01, 0x80} {
						frame[i] ^= bit
						if matches(frame, seq) || verdict(frame, seq) == responseOK {
							t.Fatalf("%+v size %d seq %d: byte %d ^ %#x accepted (matches %v)", f, size, seq, i, bit, matches(frame, seq))
						}
						frame[i] ^= bit
					}
				}
			}
		}
	}
}

// BenchmarkVerify is the generator's work per response at pipeline 64 with
// 16-byte bodies: checking it and making the next request. "window"
// compares the read with the requests' frames at once, as OnTraffic does;
// "decode+check" is the per-frame path, taken from the first response that
// differs.
func BenchmarkVerify(b *testing.B) {
	f := tlv.DefaultFormat
	p := newPayloads(f, 1, 16)
	const pipeline = 64
	var in []byte
	for seq := range pipeline {
		in = p.appendRequest(in, seq)
	}
	sent := bytes.Clone(in) // the window: the same bytes elsewhere
	win := make([]byte, 0, 2*len(in))
	run := func(b *testing.B, ok func(seq int) bool) {
		b.ReportAllocs()
		for b.Loop() {
			win = win[:0]
			for seq := range pipeline {
				if !ok(seq) {
					b.Fatal("response rejected")
				}
				win = p.appendRequest(win, seq)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pipeline), "ns/request")
	}
	b.Run("window", func(b *testing.B) {
		run(b, func(seq int) bool { return seq != 0 || string(in) == string(sent) })
	})
	b.Run("decode+check", func(b *testing.B) {
		run(b, func(seq int) bool {
			frame := in[seq*p.frameSize : (seq+1)*p.frameSize]
			h, _, _ := f.Decode(frame)
			return p.check(h, frame[f.HeaderLen():], seq) == responseOK
		})
	})
}

func TestResultFailure(t *testing.T) {
	ok := Result{Clients: 2, Payloads: 10, Requests: 20, Successes: 20}
	if err := ok.Failure(); err != nil {
		t.Fatalf("clean run: %v", err)
	}
	for name, r := range map[string]Result{
		"error":   {Clients: 2, Payloads: 10, Requests: 20, Successes: 19, Errors: 1},
		"timeout": {Clients: 2, Payloads: 10, Requests: 20, Successes: 19, Timeouts: 1},
		"missing": {Clients: 2, Payloads: 10, Requests: 19, Successes: 19},
	} {
		if r.Failure() == nil {
			t.Errorf("%s: %+v has no Failure", name, r)
		}
	}
}

// TestSummarizeLeavesOutFailedRuns: a run with an errored request is
// counted and its errors summed, but none of its figures enters a median,
// and Failed names it.
func TestSummarizeLeavesOutFailedRuns(t *testing.T) {
	ms := []Measurement{
		{Server: Tidegate, Mode: Child, Repeat: 1, Result: Result{RPS: 200, P99Ms: 1}, ServerCPUPerRequestUs: 5},
		{Server: Tidegate, Mode: Child, Repeat: 2, Result: Result{RPS: 9000, P99Ms: 50, Errors: 3, Timeouts: 1},
			ServerCPUPerRequestUs: 90, Failure: "3 errors and 1 timeouts"},
		{Server: Tidegate, Mode: Child, Repeat: 3, Result: Result{RPS: 300, P99Ms: 2}, ServerCPUPerRequestUs: 7},
	}
	if err := Failed(ms[:1]); err != nil {
		t.Fatalf("Failed of clean runs: %v", err)
	}
	s := Summarize(ms, []ServerKind{Tidegate})
	k := s.Kinds[0]
	if k.Runs != 3 || k.Failed != 1 || k.Errors != 3 || k.Timeouts != 1 {
		t.Fatalf("counts %+v", k)
	}
	if k.RPS != (harness.Spread{Median: 250, Min: 200, Max: 300, N: 2}) || k.P99Ms.Max != 2 || k.CPUPerRequestUs.Max != 7 {
		t.Fatalf("the failed run entered the spreads: %+v", k)
	}
	err := Failed(ms)
	if err == nil || !strings.Contains(err.Error(), "repeat 2, tidegate") {
		t.Fatalf("Failed = %v, want it to name repeat 2", err)
	}
}

func TestSummarizeRatios(t *testing.T) {
	ms := []Measurement{
		{Server: Tidegate, Mode: Child, Result: Result{RPS: 200, P50Ms: 1}, MemPerConnActiveKiB: 2},
		{Server: Goroutine, Mode: Child, Result: Result{RPS: 100, P50Ms: 2}, MemPerConnActiveKiB: 8},
		{Server: Tidegate, Mode: Child, Result: Result{RPS: 300, P50Ms: 1}, MemPerConnActiveKiB: 2},
		{Server: Goroutine, Mode: Child, Result: Result{RPS: 150, P50Ms: 2}, MemPerConnActiveKiB: 8},
		{Server: Tidegate, Mode: Child, Result: Result{RPS: 100, P50Ms: 1}, MemPerConnActiveKiB: 2},
	}
	s := Summarize(ms, []ServerKind{Tidegate, Goroutine})
	if got := s.Kinds[0].RPS; got != (harness.Spread{Min: 100, Median: 200, Max: 300, N: 3}) {
		t.Fatalf("tidegate RPS spread %+v", got)
	}
	if got := s.Kinds[1].RPS.Median; got != 125 {
		t.Fatalf("goroutine RPS median %v; want 125", got)
	}
	if s.RPSRatio != 1.6 || s.P50Ratio != 0.5 || s.MemActiveRatio != 0.25 {
		t.Fatalf("ratios %+v", s)
	}
}
