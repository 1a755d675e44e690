package acceptload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/internal/testkit/leaktest"
	"github.com/tidegate/tidegate/internal/testkit/standin"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/protocol/tlv"
)

// TestMain lets the test binary stand in for `tidegate serve` when Compare
// starts it (BIN serve --listen ADDR --loops L --log-level warn), and for
// `tidegate version` when BinaryServers asks for its revision.
func TestMain(m *testing.M) {
	if code, ok := standin.Run(os.Args[1:]); ok {
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Println("tidegate " + testVersion)
		os.Exit(0)
	}
	os.Exit(leaktest.Main(m))
}

const testVersion = "v0-test"

func TestRequestIsUniqueNonKeepAliveFrame(t *testing.T) {
	f := tlv.DefaultFormat
	a, b := Request(f, 1, 16), Request(f, 2, 16)
	if bytes.Equal(a, b) {
		t.Fatal("two connections send the same request")
	}
	h, n, err := f.Decode(a)
	if err != nil || n != len(a) || h.Length != 16 || h.KeepAlive || h.Type != requestType {
		t.Fatalf("request %q decodes to %+v, %d bytes, %v", a, h, n, err)
	}
	if !strings.HasPrefix(string(a[f.HeaderLen():]), "00000001") {
		t.Fatalf("body %q does not start with the connection number", a[f.HeaderLen():])
	}
}

func TestLoadConfigChecks(t *testing.T) {
	for _, c := range []LoadConfig{
		{},
		{Addr: "x", Conns: -1},
		{Addr: "x", Parallel: -2},
		{Addr: "x", Body: 7},
		{Addr: "x", Timeout: -time.Second},
		{Addr: "x", Body: 100, Format: tlv.Format{TypeWidth: 1, LengthWidth: 2, MaxBody: 50}},
	} {
		if _, err := c.withDefaults(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	c, err := LoadConfig{Addr: "x"}.withDefaults()
	if err != nil || c.Conns != DefaultConns || c.Parallel != DefaultParallel || c.Body != DefaultBody || c.Timeout != DefaultTimeout {
		t.Fatalf("defaults %+v, %v", c, err)
	}
}

func TestResultFailed(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		fail bool
	}{
		{Result{Conns: 10, OK: 10}, false},
		{Result{Conns: 10, OK: 9, Errors: 1}, true},
		{Result{Conns: 10, OK: 9}, true}, // one unaccounted for
		{Result{}, true},
	} {
		if got := tc.r.Failed(); got != tc.fail {
			t.Errorf("%+v: Failed %v, want %v", tc.r, got, tc.fail)
		}
	}
}

func f64(v float64) *float64 { return &v }

func TestSummarizeRatiosAndVerdict(t *testing.T) {
	servers := []Server{{Label: "old"}, {Label: "new"}}
	ok := func(server string, rate, cpu float64) Trial {
		return Trial{Repeat: 1, Server: server, Result: Result{Conns: 10, OK: 10, ConnsPerSec: rate, P50Us: 100, P99Us: 200},
			ServerCPUUsPerConn: f64(cpu)}
	}
	c := &Comparison{Trials: []Trial{
		ok("old", 1000, 40), ok("new", 800, 50), ok("old", 1200, 44), ok("new", 900, 54), ok("old", 1100, 42), ok("new", 850, 52),
		{Server: "old", Syscalls: true, SyscallsPerConn: f64(10)}, {Server: "new", Syscalls: true, SyscallsPerConn: f64(20)},
	}}
	c.summarize(servers)
	if !c.OK || len(c.Failures) > 0 {
		t.Fatalf("clean trials failed: %v", c.Failures)
	}
	old, nw := c.Summaries[0], c.Summaries[1]
	if old.Trials != 3 || old.ConnsPerSec != (harness.Spread{Median: 1100, Min: 1000, Max: 1200, N: 3}) {
		t.Fatalf("old: %+v", old)
	}
	if nw.SyscallsPerConn.Median != 20 || nw.SyscallsPerConn.N != 1 {
		t.Fatalf("syscall trial not kept apart: %+v", nw.SyscallsPerConn)
	}
	r := c.Ratios[0]
	if r.Server != "new" || r.Baseline != "old" || r.ServerCPUUsPerConn != 52.0/42 || r.ConnsPerSec != 850.0/1100 || r.SyscallsPerConn != 2 {
		t.Fatalf("ratios %+v", r)
	}

	// Any failed trial fails the comparison, whatever the others did.
	c.Trials = append(c.Trials, Trial{Repeat: 2, Server: "new", Failure: "1 of 10 connections failed"})
	c.summarize(servers)
	if c.OK || len(c.Failures) != 1 || !strings.Contains(c.Failures[0], "new repeat 2: 1 of 10") {
		t.Fatalf("failed trial: OK %v, failures %v", c.OK, c.Failures)
	}
	var b strings.Builder
	if err := WriteTable(&b, Report{Comparison: c}); err != nil || !strings.Contains(b.String(), "FAILED") {
		t.Fatalf("table %v:\n%s", err, b.String())
	}
	empty := &Comparison{}
	empty.summarize(servers)
	if empty.OK {
		t.Fatal("a comparison without trials passed")
	}
}

func TestRunAgainstTLVServer(t *testing.T) {
	addr := testserver.TLV(t, 1)
	start := time.Now()
	r, err := Run(context.Background(), LoadConfig{Addr: addr, Conns: 300, Parallel: 4, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed() || r.OK != 300 || r.ConnsPerSec <= 0 || r.P50Us <= 0 || r.P99Us < r.P50Us || r.MaxUs < r.P99Us {
		t.Fatalf("result %+v", r)
	}
	// A generous bound: it only catches a run that serializes on something
	// (a connection stuck until its 3 s timeout takes the run past it); 300
	// short connections take well under a second even under -race on a
	// loaded machine.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("300 connections took %v", d)
	}
}

func runFake(t *testing.T, serve func(c net.Conn)) Result {
	t.Helper()
	r, err := Run(context.Background(), LoadConfig{Addr: testserver.Conns(t, serve), Conns: 3, Parallel: 2, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Failed() || r.Errors != 3 || len(r.FirstErrors) != 3 {
		t.Fatalf("result %+v, want 3 errors", r)
	}
	return r
}

// readRequest reads one whole request of the default format.
func readRequest(c net.Conn) []byte {
	req := make([]byte, tlv.DefaultFormat.HeaderLen()+DefaultBody)
	if _, err := io.ReadFull(c, req); err != nil {
		return nil
	}
	return req
}

func TestEveryFaultIsAnError(t *testing.T) {
	cases := map[string]struct {
		serve func(c net.Conn)
		want  string
	}{
		"wrong byte": {func(c net.Conn) {
			req := readRequest(c)
			req[len(req)-1]++
			c.Write(req)
		}, "check response: byte 20"},
		"extra byte": {func(c net.Conn) { c.Write(append(readRequest(c), 'x')) }, "byte 0x78 after the response"},
		"short":      {func(c net.Conn) { c.Write(readRequest(c)[:10]) }, "read response (10 of 21 bytes)"},
		"no close": {func(c net.Conn) {
			c.Write(readRequest(c))
			io.Copy(io.Discard, c) // until the client gives up waiting for EOF
		}, "read EOF"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := runFake(t, tc.serve)
			if !strings.Contains(r.FirstErrors[0], tc.want) {
				t.Fatalf("error %q does not say %q", r.FirstErrors[0], tc.want)
			}
			if name == "no close" && r.Timeouts != 3 {
				t.Fatalf("timeouts %d, want 3", r.Timeouts)
			}
		})
	}
}

func TestRefusedConnectionsAreErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r, err := Run(context.Background(), LoadConfig{Addr: addr, Conns: 5, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Failed() || r.Errors != 5 || r.OK != 0 || !strings.Contains(r.FirstErrors[0], "connect to "+addr) {
		t.Fatalf("result %+v", r)
	}
}

func TestCanceledRunIsAnError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, LoadConfig{Addr: testserver.TLV(t, 1), Conns: 10})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want canceled", err)
	}
}

func TestBinaryServersChecks(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bins := range [][]string{{filepath.Join(dir, "missing")}, {plain}, {os.Args[0], os.Args[0]}} {
		if _, err := BinaryServers(bins); err == nil {
			t.Errorf("%v accepted", bins)
		}
	}
}

// TestCompareSpawnedServers runs the whole comparison: two binaries (the
// test binary, standing in for tidegate serve, under two names) each
// started for its trial, with their CPU read. (A server takes about a
// second to stop, so one repeat; TestOrderRotates covers the alternation.)
func TestCompareSpawnedServers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the server's CPU comes from Linux's /proc")
	}
	other := filepath.Join(t.TempDir(), "serve-b")
	if err := os.Symlink(os.Args[0], other); err != nil {
		t.Fatal(err)
	}
	servers, err := BinaryServers([]string{os.Args[0], other})
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := Compare(context.Background(), CompareConfig{Servers: servers, Repeats: 1, Warmup: 20,
		Load: LoadConfig{Conns: 200, Parallel: 4, Timeout: 3 * time.Second}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.OK || len(cmp.Trials) != 2 {
		t.Fatalf("OK %v, %d trials, failures %v", cmp.OK, len(cmp.Trials), cmp.Failures)
	}
	if cmp.Trials[0].Server != servers[0].Label || cmp.Trials[1].Server != servers[1].Label {
		t.Fatalf("trials of %s then %s, want the servers' order", cmp.Trials[0].Server, cmp.Trials[1].Server)
	}
	for _, tr := range cmp.Trials {
		if tr.ServerCPUUsPerConn == nil || *tr.ServerCPUUsPerConn <= 0 || tr.Result.OK != 200 {
			t.Fatalf("trial %+v", tr)
		}
	}
	if servers[0].Revision != testVersion || servers[1].Revision != testVersion {
		t.Fatalf("revisions %q and %q, want %q from `version`", servers[0].Revision, servers[1].Revision, testVersion)
	}
	if len(cmp.Ratios) != 1 || cmp.Ratios[0].ServerCPUUsPerConn <= 0 {
		t.Fatalf("ratios %+v", cmp.Ratios)
	}
}

// TestCompareCountsSyscalls runs a syscall trial: the server under perf,
// counting only the measured run.
func TestCompareCountsSyscalls(t *testing.T) {
	if err := peers.PerfAvailable(); err != nil {
		t.Skip(err)
	}
	servers, err := BinaryServers([]string{os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := Compare(context.Background(), CompareConfig{Servers: servers, Repeats: 1, Warmup: -1, Syscalls: true,
		Load: LoadConfig{Conns: 100, Parallel: 2, Timeout: 3 * time.Second}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.OK || len(cmp.Trials) != 2 || !cmp.Trials[1].Syscalls {
		t.Fatalf("OK %v, trials %+v, failures %v", cmp.OK, cmp.Trials, cmp.Failures)
	}
	// Each connection takes at least an accept, a read, a write and a close.
	if sys := cmp.Summaries[0].SyscallsPerConn; sys.N != 1 || sys.Median < 4 || cmp.Trials[1].ServerCPUUsPerConn != nil {
		t.Fatalf("syscalls per connection %+v, CPU %v", sys, cmp.Trials[1].ServerCPUUsPerConn)
	}
}

// TestCompareReportsAServerThatExitsEarly checks that a server binary that
// exits at once fails its trial with its exit status and log: the command
// then exits non-zero on !OK.
func TestCompareReportsAServerThatExitsEarly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the server's CPU comes from Linux's /proc")
	}
	bin := filepath.Join(t.TempDir(), "tidegate")
	script := "#!/bin/sh\nif [ \"$1\" = version ]; then echo 'tidegate " + testVersion + "'; exit 0; fi\n" +
		"echo 'serve: no such flag' >&2\nexit 2\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	servers, err := BinaryServers([]string{bin})
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := Compare(context.Background(), CompareConfig{Servers: servers, Repeats: 1, Warmup: -1,
		Load: LoadConfig{Conns: 10, Parallel: 1, Timeout: time.Second}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if cmp.OK || len(cmp.Failures) != 1 {
		t.Fatalf("OK %v, failures %q; want the one trial failed", cmp.OK, cmp.Failures)
	}
	for _, want := range []string{"exited before accepting connections", "exit status 2", "serve: no such flag"} {
		if !strings.Contains(cmp.Failures[0], want) {
			t.Errorf("failure %q does not say %q", cmp.Failures[0], want)
		}
	}
}
