//go:build linux

package upgradeload

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/internal/procs"
	"github.com/tidegate/tidegate/internal/testkit/leaktest"
	"github.com/tidegate/tidegate/reactor/handoverwire"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// The tests run the tool against a fake proxy: this test binary, started
// as `EXE proxy --config F --metrics-listen M ...`. It relays each session
// with two goroutines and, on SIGUSR2, does what a live upgrade does from
// the outside: it starts itself again with the listeners (the proxy's and
// the metrics one) and a hand-over socket, waits until the new process is
// ready, stops accepting, passes both sockets of every session, logs the
// hand-over line and exits 0. It is not tidegate's upgrade (that is tested
// in cmd/tidegate); it lets the tool's own checks be tested in a second.
const (
	// fakeFDEnv is set in a fake proxy started by a fake upgrade: the
	// hand-over socket is descriptor 3, the listeners 4 and 5.
	fakeFDEnv = "UPGRADELOAD_TEST_UPGRADED"
	// fakeLoseEnv makes the fake old process close its Nth live session (in
	// accept order) instead of handing it over.
	fakeLoseEnv = "UPGRADELOAD_TEST_LOSE"
	// fakeRefuseEnv makes the fake old process give the upgrade up, as
	// tidegate does when the new process fails: it logs the error and
	// serves on.
	fakeRefuseEnv = "UPGRADELOAD_TEST_REFUSE"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "proxy" {
		os.Exit(fakeProxy(os.Args[2:]))
	}
	os.Exit(leaktest.MainFDs(m))
}

// fakeLog writes one JSON log line as the proxy would.
func fakeLog(level, msg, fields string) {
	if fields != "" {
		fields = "," + fields
	}
	fmt.Fprintf(os.Stderr, "{\"level\":%q%s,\"message\":%q}\n", level, fields, msg)
}

type fake struct {
	backend string
	metrics *net.TCPListener
	mu      sync.Mutex
	order   []*fakeSession
}

type fakeSession struct {
	c, b   *net.TCPConn
	moving atomic.Bool // stopped for the hand-over
	ended  atomic.Bool
	wg     sync.WaitGroup
}

func fakeProxy(args []string) int {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	configPath := fs.String("config", "", "")
	metrics := fs.String("metrics-listen", "", "")
	fs.String("log-level", "", "")
	fs.String("log-format", "", "")
	fail := func(err error) int {
		fakeLog("error", err.Error(), "")
		return 1
	}
	if err := fs.Parse(args); err != nil {
		return fail(err)
	}
	cfg, _, err := config.Load(*configPath)
	if err != nil {
		return fail(err)
	}
	f := &fake{backend: cfg.Groups["main"].Backends[0].Addr}
	var ln, mln net.Listener
	var hc *handoverwire.Conn
	if os.Getenv(fakeFDEnv) != "" {
		_ = os.Unsetenv(fakeFDEnv)
		file := func(fd uintptr) *os.File { return os.NewFile(fd, "inherited-"+strconv.Itoa(int(fd))) }
		if hc, err = handoverwire.FromFile(file(3)); err == nil {
			if ln, err = net.FileListener(file(4)); err == nil {
				mln, err = net.FileListener(file(5))
			}
		}
	} else if ln, err = net.Listen("tcp", cfg.Listeners[0].Listen); err == nil {
		mln, err = net.Listen("tcp", *metrics)
	}
	if err != nil {
		return fail(err)
	}
	f.metrics = mln.(*net.TCPListener)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"status":"ok","pid":%d}`, os.Getpid())
	})}
	go func() { _ = hs.Serve(mln) }()
	go f.accept(ln)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR2)
	if hc != nil {
		if err := hc.Send([]byte("ready")); err != nil {
			return fail(err)
		}
		go f.takeOver(hc)
	}
	for sig := range sigs {
		if sig == syscall.SIGUSR2 {
			if err := f.upgrade(ln, hs); err != nil {
				fakeLog("error", "live upgrade failed: "+err.Error(), "")
				continue
			}
			return 0
		}
		ln.Close()
		hs.Close()
		f.mu.Lock()
		for _, s := range f.order {
			s.c.Close()
			s.b.Close()
		}
		f.mu.Unlock()
		return 0
	}
	return 0
}

func (f *fake) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", f.backend)
		if err != nil {
			c.Close()
			continue
		}
		f.relay(c.(*net.TCPConn), b.(*net.TCPConn))
	}
}

func (f *fake) relay(c, b *net.TCPConn) {
	s := &fakeSession{c: c, b: b}
	f.mu.Lock()
	f.order = append(f.order, s)
	f.mu.Unlock()
	s.wg.Add(2)
	go s.pump(c, b)
	go s.pump(b, c)
}

// pump copies src to dst until src fails; a deadline set for the hand-over
// leaves both open, anything else closes both.
func (s *fakeSession) pump(dst, src *net.TCPConn) {
	defer s.wg.Done()
	buf := make([]byte, 4096)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			if s.moving.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
			s.ended.Store(true)
			s.c.Close()
			s.b.Close()
			return
		}
	}
}

func (f *fake) upgrade(ln net.Listener, hs *http.Server) error {
	if os.Getenv(fakeRefuseEnv) != "" {
		return errors.New("the new process exited before it was ready (a test)")
	}
	hc, child, err := handoverwire.NewPair()
	if err != nil {
		return err
	}
	defer hc.Close()
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		return err
	}
	defer lf.Close()
	mf, err := f.metrics.File()
	if err != nil {
		return err
	}
	defer mf.Close()
	// Passing a descriptor to a child makes its open file, shared with
	// this process's listeners, blocking (os.File.Fd): a goroutine of this
	// process accepting on it then blocks in accept(2), and closing the
	// listener waits for it. This fake stops accepting first; connections
	// wait in the backlog for the new process.
	ln.Close()
	hs.Close()
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), fakeFDEnv+"=1")
	cmd.ExtraFiles = []*os.File{child, lf, mf}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Start()
	child.Close()
	if err != nil {
		return err
	}
	if _, _, err := hc.Recv(); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("the new process did not get ready: %w", err)
	}
	_ = cmd.Process.Release()
	start := time.Now()
	lose := -1
	if v := os.Getenv(fakeLoseEnv); v != "" {
		lose, _ = strconv.Atoi(v)
	}
	f.mu.Lock()
	list := f.order
	f.mu.Unlock()
	n, live := 0, 0
	for _, s := range list {
		if s.ended.Load() {
			continue
		}
		s.moving.Store(true)
		now := time.Now()
		_ = s.c.SetReadDeadline(now)
		_ = s.b.SetReadDeadline(now)
		s.wg.Wait()
		if s.ended.Load() {
			continue
		}
		if live++; live-1 == lose {
			s.c.Close()
			s.b.Close()
			continue
		}
		cf, err1 := s.c.File()
		bf, err2 := s.b.File()
		if err1 == nil && err2 == nil {
			if err := hc.Send(nil, cf, bf); err == nil {
				n++
			}
		}
		for _, f := range []*os.File{cf, bf} {
			if f != nil {
				f.Close()
			}
		}
		s.c.Close()
		s.b.Close()
	}
	fakeLog("info", msgHandedOver, fmt.Sprintf(`"sessions":%d,"took":%q,"left":0`, n, time.Since(start).String()))
	return nil
}

func (f *fake) takeOver(hc *handoverwire.Conn) {
	start := time.Now()
	n := 0
	for {
		_, files, err := hc.Recv()
		if err != nil {
			break
		}
		var conns []*net.TCPConn
		for _, file := range files {
			if c, err := net.FileConn(file); err == nil {
				conns = append(conns, c.(*net.TCPConn))
			}
			file.Close()
		}
		if len(conns) != 2 {
			for _, c := range conns {
				c.Close()
			}
			fakeLog("error", "take-over: a session could not be adopted and is lost", "")
			continue
		}
		f.relay(conns[0], conns[1])
		n++
	}
	hc.Close()
	fakeLog("info", msgTookOver, fmt.Sprintf(`"sessions":%d,"took":%f`, n, harness.Ms(time.Since(start))))
}

// testConfig is a small, fast run against the fake proxy; a failed test
// shows the proxy's log.
func testConfig(t *testing.T) Config {
	dir := t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(dir + "/trial-1/tidegate-proxy.log")
			t.Logf("proxy log:\n%s", b)
		}
	})
	return Config{Executable: os.Args[0], Sessions: 50, Interval: 20 * time.Millisecond, Repeats: 1,
		// A warm-up of 2 s: at load 50 the sessions' first echoes took over 500 ms.
		Warmup: 2 * time.Second, Baseline: 300 * time.Millisecond, Settle: 150 * time.Millisecond,
		UpgradeTimeout: 20 * time.Second, EchoTimeout: 3 * time.Second, Dir: dir,
		Log: zerolog.New(zerolog.ConsoleWriter{Out: t.Output(), NoColor: true, TimeFormat: "15:04:05.000"}).With().Timestamp().Logger()}
}

func TestRunKeepsEverySession(t *testing.T) {
	res, err := Run(context.Background(), testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || len(res.Trials) != 1 {
		t.Fatalf("want a passing run of one trial, got OK %v, %d trials, failures %q", res.OK, len(res.Trials), res.Failures)
	}
	tr := res.Trials[0]
	if tr.Kept != 50 || tr.Upgrade.Sessions != 50 || tr.Baseline.Sessions != 50 {
		t.Errorf("kept %d, gaps over %d (upgrade) and %d (baseline) sessions; want 50 each", tr.Kept, tr.Upgrade.Sessions, tr.Baseline.Sessions)
	}
	if tr.NewPID == 0 || tr.NewPID == tr.OldPID || procs.Alive(tr.NewPID) {
		t.Errorf("old pid %d, new pid %d (alive %v): want a new process, gone at the end", tr.OldPID, tr.NewPID, tr.NewPID != 0 && procs.Alive(tr.NewPID))
	}
	if tr.NewExit != "exit status 0" || tr.OldExit != "exit status 0" || !tr.NewSession {
		t.Errorf("old process %q, new process %q, new session %v", tr.OldExit, tr.NewExit, tr.NewSession)
	}
	if tr.HandoverMs <= 0 || tr.LoggedHandover == nil || tr.LoggedHandover.Sessions != 50 || tr.LoggedTakeover == nil {
		t.Errorf("hand-over %.1f ms, logged %+v / %+v", tr.HandoverMs, tr.LoggedHandover, tr.LoggedTakeover)
	}
	// Every session echoes every 20 ms: its longest gap is at least that.
	if tr.Baseline.MedianMs < 15 || tr.Upgrade.MaxMs < tr.Upgrade.MedianMs || tr.Baseline.MaxMs < tr.Baseline.P99Ms {
		t.Errorf("gaps baseline %+v upgrade %+v", tr.Baseline, tr.Upgrade)
	}
	if want := int64(50 * 20); tr.Echoes < want {
		t.Errorf("%d echoes in all, want at least %d", tr.Echoes, want)
	}
	dir := t.TempDir()
	res.Meta.Date = "2026-12-01T00:00:00Z"
	path, err := WriteReport(dir, "", res)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "PASS") || !strings.Contains(string(b), msgHandedOver) {
		t.Errorf("report %s has no PASS or no hand-over log line:\n%s", path, b)
	}
}

// faultyEcho echoes whole messages, except that it does fault to message
// seq of session id.
func faultyEcho(id, seq uint32, fault string) func(net.Conn) {
	return func(c net.Conn) {
		var m [msgLen]byte
		for {
			if _, err := io.ReadFull(c, m[:]); err != nil {
				return
			}
			if binary.BigEndian.Uint32(m[0:]) == id && binary.BigEndian.Uint32(m[4:]) == seq {
				switch fault {
				case "drop":
					continue
				case "duplicate":
					_, _ = c.Write(m[:])
				case "corrupt":
					m[12] ^= 0x10
				case "close":
					return
				}
			}
			if _, err := c.Write(m[:]); err != nil {
				return
			}
		}
	}
}

// TestRunFails: one wrong echo, or one session the proxy loses in the
// upgrade, fails the run and names the session and what happened.
func TestRunFails(t *testing.T) {
	for _, tc := range []struct {
		name, fault string
		lose        bool
		want        []string
	}{
		{"dropped echo", "drop", false, []string{"session 7: " + kindLost, "echo 4 arrived where echo 3 was due"}},
		{"duplicated echo", "duplicate", false, []string{"session 7: " + kindRepeated, "echo 3 arrived again"}},
		{"corrupted echo", "corrupt", false, []string{"session 7: " + kindCorrupted}},
		// The client may see a closed session end as its read ends or as
		// its next write fails, whichever comes first: both name it. (A
		// backend close is relayed as a close of the client's connection,
		// and a write the client makes before its read sees the FIN gets
		// EPIPE once the proxy's RST is back.)
		{"backend closed", "close", false, []string{"session 7: " + kindEnded + "|session 7: " + kindWrite}},
		{"session lost in the upgrade", "", true, []string{kindEnded + "|" + kindWrite, "in the upgrade window", "1 sessions failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			if tc.fault != "" {
				cfg.echo = faultyEcho(7, 3, tc.fault)
			}
			if tc.lose {
				cfg.env = []string{fakeLoseEnv + "=5"}
			}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(res.Failures, "\n")
			if res.OK || res.Trials[0].Kept != 49 || res.Trials[0].SessionFailures != 1 {
				t.Fatalf("OK %v, kept %d, %d sessions failed; want a failed run keeping 49 of 50:\n%s", res.OK, res.Trials[0].Kept, res.Trials[0].SessionFailures, all)
			}
			for _, w := range tc.want {
				found := false
				for _, alt := range strings.Split(w, "|") {
					found = found || strings.Contains(all, alt)
				}
				if !found {
					t.Errorf("failures do not say %q:\n%s", w, all)
				}
			}
			if tr := res.Trials[0]; tr.NewPID == 0 || procs.Alive(tr.NewPID) {
				t.Errorf("new pid %d: want one, gone at the end", tr.NewPID)
			}
		})
	}
}

// TestRunFailsFastWhenTheUpgradeIsGivenUp: the old process logs that the
// upgrade failed and serves on; the trial fails at once, not after the
// upgrade timeout, and the old process is stopped.
func TestRunFailsFastWhenTheUpgradeIsGivenUp(t *testing.T) {
	cfg := testConfig(t)
	cfg.env = []string{fakeRefuseEnv + "=1"}
	// Long enough that half of it bounds the whole run on a loaded machine
	// (it took 10 s at load 50); a run that waited for it would take a minute.
	cfg.UpgradeTimeout = time.Minute
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(res.Failures, "\n")
	if res.OK || !strings.Contains(all, "gave the upgrade up") || !strings.Contains(all, msgUpgradeFailed) {
		t.Fatalf("OK %v; want a failure that names the given-up upgrade:\n%s", res.OK, all)
	}
	if took := time.Since(start); took > cfg.UpgradeTimeout/2 {
		t.Errorf("the run took %s, want well under the upgrade timeout %s", took, cfg.UpgradeTimeout)
	}
	if tr := res.Trials[0]; procs.Alive(tr.OldPID) {
		t.Errorf("the old process %d is still running", tr.OldPID)
	}
}

func TestFits(t *testing.T) {
	lim := FDLimit{Soft: 20000, Hard: 20000}
	if err := fits(9000, lim); err != nil {
		t.Errorf("9000 sessions in 20000 descriptors: %v", err)
	}
	err := fits(9950, lim)
	if err == nil || !strings.Contains(err.Error(), "at most 9900 sessions fit") || !strings.Contains(err.Error(), "the proxy") {
		t.Errorf("9950 sessions in 20000 descriptors: %v, want the proxy's limit and 9900", err)
	}
	err = fits(10000, lim)
	if err == nil || !strings.Contains(err.Error(), "in this tool") {
		t.Errorf("10000 sessions in 20000 descriptors: %v, want this tool's limit", err)
	}
}

func TestRank(t *testing.T) {
	v := make([]float64, 200)
	for i := range v {
		v[i] = float64(i + 1)
	}
	if p99, p50 := rank(v, 0.99), rank(v, 0.5); p99 != 198 || p50 != 100 {
		t.Errorf("p99 %v p50 %v of 1..200, want 198 and 100", p99, p50)
	}
	if one := rank([]float64{7}, 0.99); one != 7 {
		t.Errorf("p99 of one value: %v", one)
	}
}

// TestFigureReadsDurationsWithUnits: tidegate logs durations as strings
// with units; a took that does not parse is -1, never a free 0.
func TestFigureReadsDurationsWithUnits(t *testing.T) {
	for _, tc := range []struct {
		took any
		want float64
	}{{"350.3ms", 350.3}, {"1m10.5s", 70500}, {350.3, -1}, {"soon", -1}} {
		f := figure(map[string]any{"sessions": 3.0, "took": tc.took}, "info")
		if f.TookMs != tc.want || f.Sessions != 3 {
			t.Errorf("took %v: TookMs %v, sessions %d; want %v, 3", tc.took, f.TookMs, f.Sessions, tc.want)
		}
	}
}
