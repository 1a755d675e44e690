package storm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	echobackend "github.com/tidegate/tidegate/benchmarks/echo"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/internal/testkit/standin"
)

// TestMain lets the test binary stand in for `tidegate proxy` when a test
// starts it as the proxy under test (peers.Start runs EXE proxy --config F).
func TestMain(m *testing.M) {
	if code, ok := standin.Run(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// noLeaks fails the test when it ends with more goroutines or open files
// than it started with (after giving closing ones a moment).
func noLeaks(t *testing.T) {
	t.Helper()
	g0, f0 := runtime.NumGoroutine(), openFiles()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for {
			g, f := runtime.NumGoroutine(), openFiles()
			if g <= g0 && f <= f0 {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("leak: %d goroutines (was %d), %d open files (was %d)\n%s", g, g0, f, f0, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// openFiles counts this process's descriptors, or -1 without /proc.
func openFiles() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

func startEcho(t *testing.T) *echobackend.Server {
	t.Helper()
	var s echobackend.Server
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return &s
}

func TestClassify(t *testing.T) {
	sys := func(op string, e syscall.Errno) error {
		return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, e)}
	}
	timeout := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		dial, echo error
		want       Outcome
		reason     string
	}{
		{nil, nil, Accepted, ""},
		{sys("connect", syscall.ECONNREFUSED), nil, Refused, "connect refused"},
		{sys("connect", syscall.ECONNRESET), nil, Refused, "reset during connect"},
		{timeout, nil, TimedOut, "no connection"},
		{context.DeadlineExceeded, nil, TimedOut, "no connection"},
		{sys("socket", syscall.EMFILE), nil, Errored, "client out of descriptors"},
		{sys("connect", syscall.EADDRNOTAVAIL), nil, Errored, "client out of local ports"},
		{nil, &stepError{"read", io.EOF}, Refused, "closed"},
		{nil, &stepError{"read", io.ErrUnexpectedEOF}, Refused, "closed"},
		{nil, &stepError{"read", sys("read", syscall.ECONNRESET)}, Refused, "reset"},
		{nil, &stepError{"write", sys("write", syscall.EPIPE)}, Refused, "reset"},
		{nil, &stepError{"read", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}}, TimedOut, "no echo"},
		{nil, fmt.Errorf("%w: sent a, got b", errWrongEcho), Errored, "wrong echo"},
		{nil, errors.New("something else"), Errored, "echo: something else"},
	} {
		o, r := Classify(c.dial, c.echo)
		if o != c.want || r != c.reason {
			t.Errorf("Classify(%v, %v) = %v %q, want %v %q", c.dial, c.echo, o, r, c.want, c.reason)
		}
	}
}

func TestMessagesAreUniqueAndSized(t *testing.T) {
	a, b := message('H', 1, 2, heldMessage), message('H', 12, 2, heldMessage)
	if len(a) != heldMessage || len(b) != heldMessage || bytes.Equal(a, b) || bytes.Equal(a, message('H', 1, 3, heldMessage)) {
		t.Fatalf("messages %q %q", a, b)
	}
	if m := message('S', 123456, 0, stormMessage); len(m) != stormMessage || !bytes.HasPrefix(m, []byte("S123456:0:")) {
		t.Fatalf("storm message %q", m)
	}
}

func TestTrialVerdict(t *testing.T) {
	good := Trial{Target: "haproxy", Held: HeldResult{Count: 10, Echoes: 50}, Storm: &StormResult{Count: 5, Accepted: 2, Refused: 2, TimedOut: 1},
		Alive: true, NewSession: true}
	if f := good.Failures(); len(f) != 0 {
		t.Fatalf("good trial fails: %v", f)
	}
	lost := good
	lost.Held.Lost, lost.Held.Reasons = 3, map[string]int{"closed": 2, "reset": 1}
	if f := lost.Failures(); len(f) != 1 || f[0] != "3 of 10 held sessions lost (closed x2, reset x1)" {
		t.Fatalf("lost sessions: %v", f)
	}
	dead := good
	dead.Alive, dead.NewSession, dead.NewSessionError = false, false, "connection refused"
	if f := dead.Failures(); len(f) != 2 {
		t.Fatalf("dead proxy: %v", f)
	}
	errd := good
	errd.Storm = &StormResult{Count: 5, Accepted: 4, Errored: 1}
	if f := errd.Failures(); len(f) != 1 || !strings.Contains(f[0], "errored") {
		t.Fatalf("errored storm connection: %v", f)
	}
	short := good
	short.Storm = &StormResult{Count: 5, Accepted: 4}
	if f := short.Failures(); len(f) != 1 || !strings.Contains(f[0], "add up to 4, not 5") {
		t.Fatalf("storm that does not add up: %v", f)
	}
	notRun := Trial{Target: "nginx", Error: "starting nginx: no such file"}
	if f := notRun.Failures(); len(f) != 1 || !strings.HasPrefix(f[0], "error: ") {
		t.Fatalf("trial that did not run: %v", f)
	}

	r := &Result{Trials: []Trial{good, good, good}}
	r.summarize([]peers.Kind{peers.KindHAProxy})
	if !r.OK || len(r.Summary) != 1 || !r.Summary[0].OK || r.Summary[0].Accepted.Format(0) != "2 [2–2]" {
		t.Fatalf("all good: %+v", r)
	}
	r = &Result{Trials: []Trial{good, lost, good}}
	r.summarize([]peers.Kind{peers.KindHAProxy})
	if r.OK || r.Summary[0].OK || len(r.Failures) != 1 || r.Summary[0].HeldLost.Format(0) != "0 [0–3]" {
		t.Fatalf("one lost: %+v", r)
	}
	r = &Result{}
	r.summarize([]peers.Kind{peers.KindHAProxy})
	if r.OK {
		t.Fatal("a run of no trial is OK")
	}
}

func TestReportFiles(t *testing.T) {
	good := Trial{Target: "nginx", Held: HeldResult{Count: 10, Echoes: 50}, Storm: &StormResult{Count: 5, Accepted: 5, AcceptP50Ms: 1.5, AcceptP99Ms: 2.5},
		Alive: true, NewSession: true, CPUMeasured: true, CPUMs: 12}
	bad := Trial{Target: "tidegate-raw", Held: HeldResult{Count: 10, Lost: 10, Reasons: map[string]int{"closed": 10}},
		Storm: &StormResult{Count: 5, Refused: 5, Reasons: map[string]int{"refused: connect refused": 5}}, Alive: true,
		NewSessionError: "connection refused", ProxyLog: "12:00 WRN refused\n12:00 ERR engine shutdown error: gnet\n12:01 WRN after"}
	r := &Result{Meta: Meta{Command: "tidegate bench storm --held 10", Date: "2026-12-01T07:00:00Z", Revision: "abc123-dirty"},
		Params: Params{Held: 10, Storm: 5, Limit: 8, NoFile: 40, Repeats: 1}, Trials: []Trial{bad, good}}
	r.summarize([]peers.Kind{peers.KindTidegateRaw, peers.KindNginx})
	dir := t.TempDir()
	path, err := WriteReport(dir, "before", r)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "2026-12-01-storm-before.md" {
		t.Fatalf("report file %s", path)
	}
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`tidegate bench storm --held 10`", "revision: abc123-dirty", "FAIL", "| tidegate-raw | 10 [10–10] |",
		"| nginx | 0 [0–0] | 5 [5–5] |", "1.5 [1.5–1.5]", "**no** (0/1)", "ERR engine shutdown error: gnet", "10 of 10 held sessions lost"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if got := logExcerpt(bad.ProxyLog, 5); got != "12:00 ERR engine shutdown error: gnet" {
		t.Errorf("log excerpt with an error line: %q", got)
	}
	if got := logExcerpt("a\nb\nc", 2); got != "b\nc" {
		t.Errorf("log excerpt without error lines: %q", got)
	}
	if got := logExcerpt(strings.Repeat("x ERR y\n", 5), 3); got != "x ERR y\nx ERR y\n… 3 more error lines" {
		t.Errorf("log excerpt of many error lines: %q", got)
	}
	if got := stripANSI("\x1b[90m07:25\x1b[0m \x1b[31mERR\x1b[0m x"); got != "07:25 ERR x" {
		t.Errorf("stripANSI: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "2026-12-01-storm-before.json")); err != nil {
		t.Error(err)
	}
}

// fakeProxy accepts connections and answers them in turn: the first serve
// are echoed, the next reset are reset, the rest get no answer. Its
// connections end with the test.
func fakeProxy(t *testing.T, serve, reset int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			switch {
			case n < serve:
				wg.Add(1)
				go func() { defer wg.Done(); echobackend.Loop(c, make([]byte, echobackend.DefaultBufferSize)) }()
			case n < serve+reset:
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func TestStormCountsEachOutcome(t *testing.T) {
	noLeaks(t)
	addr := fakeProxy(t, 7, 5)
	run, err := Storm(context.Background(), StormConfig{Addr: addr, Count: 20, Timeout: 700 * time.Millisecond,
		Sources: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2)}})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	r := run.Result
	if r.Accepted != 7 || r.Refused != 5 || r.TimedOut != 8 || r.Errored != 0 || r.Sum() != 20 {
		t.Fatalf("outcomes %+v", r)
	}
	if r.Reasons["timed out: no echo"] != 8 || r.Reasons["refused: reset"]+r.Reasons["refused: reset during connect"]+r.Reasons["refused: closed"] != 5 {
		t.Fatalf("reasons %v", r.Reasons)
	}
	if r.AcceptP50Ms <= 0 || r.AcceptP50Ms > r.AcceptP99Ms || r.AcceptP99Ms > r.AcceptMaxMs || r.ConnectP99Ms <= 0 {
		t.Fatalf("latencies %+v", r)
	}
	if len(run.served) != 7 {
		t.Fatalf("%d served connections kept", len(run.served))
	}
}

func TestStormWithoutListenerIsRefused(t *testing.T) {
	noLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	run, err := Storm(context.Background(), StormConfig{Addr: addr, Count: 10, Parallel: 3, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if r := run.Result; r.Refused != 10 || r.Reasons["refused: connect refused"] != 10 {
		t.Fatalf("outcomes %+v", r)
	}
}

// wrongEcho answers every connection with bytes that differ from its input.
func wrongEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, 64)
				n, _ := c.Read(buf)
				c.Write(bytes.Repeat([]byte("x"), n))
				io.Copy(io.Discard, c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func TestStormCatchesWrongEcho(t *testing.T) {
	noLeaks(t)
	run, err := Storm(context.Background(), StormConfig{Addr: wrongEcho(t), Count: 4, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if r := run.Result; r.Errored != 4 || r.Reasons["errored: wrong echo"] != 4 {
		t.Fatalf("outcomes %+v", r)
	}
}

func TestHeldSessionsLostWhenCut(t *testing.T) {
	noLeaks(t)
	s := startEcho(t)
	h, err := OpenHeld(context.Background(), HeldConfig{Addr: s.Addr().String(), Count: 10, Parallel: 4, Interval: 10 * time.Millisecond, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	r := h.Stop()
	if r.Count != 10 || r.Lost != 0 || r.Echoes < 30 {
		t.Fatalf("held on a healthy echo: %+v", r)
	}

	h, err = OpenHeld(context.Background(), HeldConfig{Addr: s.Addr().String(), Count: 6, Interval: 10 * time.Millisecond, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	// Cut the backend's side of every connection, as a dying proxy does.
	s.EachConn(func(c net.Conn) { c.Close() })
	time.Sleep(100 * time.Millisecond)
	r = h.Stop()
	if r.Lost != 6 || r.Reasons["closed"]+r.Reasons["reset"] != 6 {
		t.Fatalf("held on a cut echo: %+v", r)
	}

	if _, err := OpenHeld(context.Background(), HeldConfig{Addr: wrongEcho(t), Count: 2, Interval: time.Second, Timeout: time.Second}); err == nil ||
		!errors.Is(err, errWrongEcho) {
		t.Fatalf("held sessions opened on a wrong echo: %v", err)
	}
}

func TestNewSession(t *testing.T) {
	noLeaks(t)
	s := startEcho(t)
	if ok, n, err := NewSession(context.Background(), s.Addr().String(), time.Second, time.Second); !ok || n != 1 || err != nil {
		t.Fatalf("new session on an echo: %v %d %v", ok, n, err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	ok, n, err := NewSession(context.Background(), addr, 350*time.Millisecond, 100*time.Millisecond)
	if ok || n < 2 || err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("new session on nothing: %v %d %v", ok, n, err)
	}
}

// TestRunMeasuresEveryTarget runs the whole benchmark at a tiny scale
// against tidegate-raw (the test binary as the proxy process) and, where
// they are installed, HAProxy and nginx. It checks the measurement, not the
// proxies' survival: every storm connection has one outcome, the held
// sessions were all verified, and a failure is said.
func TestRunMeasuresEveryTarget(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("prlimit and /proc are Linux's")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit:", err)
	}
	targets := []peers.Kind{peers.KindTidegateRaw}
	for k, bin := range map[peers.Kind]string{peers.KindHAProxy: "haproxy", peers.KindNginx: "nginx"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Logf("%s not tested: %v", k, err)
			continue
		}
		if k == peers.KindNginx {
			if _, err := os.Stat(peers.NginxStreamModule); err != nil {
				t.Logf("nginx not tested: %v", err)
				continue
			}
		}
		targets = append(targets, k)
	}
	noLeaks(t)
	be := startEcho(t)
	res, err := Run(context.Background(), Config{
		Targets: targets, Repeats: 1, Held: 20, Storm: 200, Limit: 50, NoFile: 400, ProxyCores: 1,
		Backend: be.Addr().String(), StormTimeout: time.Second, HeldInterval: 20 * time.Millisecond,
		EchoTimeout: 2 * time.Second, AfterTimeout: time.Second, Executable: os.Args[0], Prlimit: prlimit,
		Sources: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trials) != len(targets) || len(res.Summary) != len(targets) {
		t.Fatalf("%d trials and %d summaries for %d targets", len(res.Trials), len(res.Summary), len(targets))
	}
	for _, tr := range res.Trials {
		if tr.Error != "" {
			t.Errorf("%s: %s\n%s", tr.Target, tr.Error, tr.ProxyLog)
			continue
		}
		st := tr.Storm
		if st.Sum() != 200 || st.Accepted+st.Refused+st.TimedOut != 200 || st.Errored != 0 {
			t.Errorf("%s: storm outcomes do not add up to 200 without errors: %+v", tr.Target, st)
		}
		// The limit is in force: no more than the places the held sessions
		// leave (none at all when a proxy dies at once).
		if st.Accepted > 50-20 {
			t.Errorf("%s: %d storm connections accepted, more than the %d free places", tr.Target, st.Accepted, 50-20)
		}
		h := tr.Held
		if h.Count != 20 || h.Lost < 0 || h.Lost > 20 || h.Echoes < 20 || (h.Lost == 0 && h.Echoes < 40) {
			t.Errorf("%s: held sessions %+v", tr.Target, h)
		}
		if !tr.CPUMeasured && tr.Alive {
			t.Errorf("%s: CPU not measured on a live proxy: %s", tr.Target, tr.CPUNote)
		}
		ok := len(tr.Failures()) == 0
		if ok != (h.Lost == 0 && tr.Alive && tr.NewSession) {
			t.Errorf("%s: verdict %v for lost %d, alive %v, new session %v", tr.Target, tr.Failures(), h.Lost, tr.Alive, tr.NewSession)
		}
		if !tr.NewSession && tr.NewSessionError == "" {
			t.Errorf("%s: no new session and no reason", tr.Target)
		}
		t.Logf("%s: held lost %d (%d echoes), storm %d/%d/%d, alive %v, new session %v, CPU %.1f ms",
			tr.Target, h.Lost, h.Echoes, st.Accepted, st.Refused, st.TimedOut, tr.Alive, tr.NewSession, tr.CPUMs)
	}
}
