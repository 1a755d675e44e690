package mcload

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidegate/tidegate/benchmarks/gometrics"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/mcclient"
	"github.com/tidegate/tidegate/benchmarks/procstat"
	"github.com/tidegate/tidegate/benchmarks/sockopt"
)

// idleEchoPayload is the body size of the one PLAY packet each idle session
// echoes after login and again for the liveness check.
const idleEchoPayload = 64

// WorkerConfig is what one idle worker process does.
type WorkerConfig struct {
	Addr     string
	ID       int
	Count    int
	Parallel int
	Sources  []net.IP
	Timeout  time.Duration
}

// WorkerReport is a worker's answer, one JSON line on its standard output.
type WorkerReport struct {
	Phase   string         `json:"phase"` // "ready" after logins, "checked" after the liveness check
	OK      int            `json:"ok"`
	Failed  int            `json:"failed"`
	Reasons map[string]int `json:"reasons,omitempty"`
}

// echoOnce sends one PLAY packet on c and checks its echo.
func echoOnce(c net.Conn, seq int, timeout time.Duration) error {
	body := make([]byte, 0, idleEchoPayload)
	body = append(body, mcclient.PlayPacketID)
	body = strconv.AppendInt(body, int64(seq), 10)
	for len(body) < idleEchoPayload {
		body = append(body, byte(len(body)))
	}
	frame := append([]byte{idleEchoPayload}, body...) // 64 < 128: one-byte length prefix
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(frame); err != nil {
		return fmt.Errorf("echo write: %w", err)
	}
	got := make([]byte, len(frame))
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("echo read: %w", err)
	}
	if string(got) != string(frame) {
		return errors.New("echo differs from what was sent")
	}
	return nil
}

// RunWorker opens cfg.Count sessions through cfg.Addr, logs each in and
// echoes one packet, reports "ready" on out, then waits for a line on in:
// "check" echoes once more on every session and reports "checked"; the end
// of in closes the sessions and returns.
func RunWorker(ctx context.Context, cfg WorkerConfig, in io.Reader, out io.Writer) error {
	cfg.Timeout = cmp.Or(cfg.Timeout, 10*time.Second)
	host, port, err := mcclient.SplitHostPort(cfg.Addr)
	if err != nil {
		return err
	}
	conns := make([]net.Conn, cfg.Count)
	ready := WorkerReport{Phase: "ready", Reasons: map[string]int{}}
	var mu sync.Mutex
	// A proxy at its descriptor limit stops accepting: every further login
	// would wait out its whole timeout. Give up after this many failures in
	// a row instead, and count the rest as not attempted.
	giveUpAfter := 2 * max(cfg.Parallel, 1)
	failedInRow := 0
	forEach(cfg.Count, max(cfg.Parallel, 1), func(i int) {
		mu.Lock()
		if failedInRow >= giveUpAfter {
			ready.Failed++
			ready.Reasons["not attempted: too many failures in a row"]++
			mu.Unlock()
			return
		}
		mu.Unlock()
		reason := ""
		deadline := time.Now().Add(cfg.Timeout)
		cctx, cancel := context.WithDeadline(ctx, deadline)
		c, err := sockopt.SourceDialer(cfg.Sources, i).DialContext(cctx, "tcp", cfg.Addr)
		cancel()
		if err != nil {
			reason = connectReason(err)
		} else if _, err := mcclient.Login(c, host, port, fmt.Sprintf("w%d_%d", cfg.ID, i), nil, deadline); err != nil {
			var le *mcclient.LoginError
			reason = err.Error()
			if errors.As(err, &le) {
				reason = le.Reason
			}
		} else if err := echoOnce(c, 0, cfg.Timeout); err != nil {
			reason = "echo: " + ioReason(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if reason != "" {
			failedInRow++
			ready.Failed++
			ready.Reasons[reason]++
			if c != nil {
				c.Close()
			}
			return
		}
		failedInRow = 0
		ready.OK++
		conns[i] = c
	})
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	enc := json.NewEncoder(out)
	if err := enc.Encode(ready); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "check" {
			continue
		}
		checked := WorkerReport{Phase: "checked", Reasons: map[string]int{}}
		forEach(cfg.Count, max(cfg.Parallel, 1), func(i int) {
			c := conns[i]
			if c == nil {
				return
			}
			err := echoOnce(c, 1, cfg.Timeout)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				checked.Failed++
				checked.Reasons["dead: "+ioReason(err)]++
				return
			}
			checked.OK++
		})
		if err := enc.Encode(checked); err != nil {
			return err
		}
	}
	return nil
}

// forEach runs f(0..n-1), limit calls at a time (harness.Each); it does
// not stop early: a failed login or echo is f's to count.
func forEach(n, limit int, f func(i int)) {
	_ = harness.Each(context.Background(), n, limit, func(i int) error { f(i); return nil })
}

// IdleConfig is an idle-sessions probe.
type IdleConfig struct {
	// Addr is the proxy to hold sessions through; PIDs are its processes.
	Addr string
	PIDs []int
	// Sessions are spread over Workers worker processes, which log in
	// Parallel sessions at a time each.
	Sessions, Workers, Parallel int
	Sources                     []net.IP
	// Hold is how long the sessions stay idle before the liveness check.
	Hold time.Duration
	// WorkerCommand is the command line of a worker without its
	// per-worker flags; Run appends --addr, --id, --count, --parallel,
	// --sources.
	WorkerCommand []string
	Timeout       time.Duration
	// MetricsAddr is the proxy's metrics address (a tidegate proxy's
	// --metrics-listen); with it the probe also reads the proxy's Go heap
	// and goroutines.
	MetricsAddr string
	// HeapProfile, with MetricsAddr, is where the proxy's heap profile is
	// saved at the end of the hold, after two forced GCs (its in-use
	// figures are then the live heap).
	HeapProfile string
}

// IdleResult is what the idle probe measured.
type IdleResult struct {
	Target        string         `json:"target,omitempty"`
	Sessions      int            `json:"sessions"`
	Workers       int            `json:"workers"`
	LoggedIn      int            `json:"logged_in"`
	Alive         int            `json:"alive"`
	HoldSeconds   float64        `json:"hold_seconds"`
	Failures      map[string]int `json:"failures,omitempty"`
	RSSBeforeMiB  float64        `json:"rss_before_mib"`
	RSSAfterMiB   float64        `json:"rss_after_mib"`
	RSSPerSession float64        `json:"rss_per_session_kib"`
	ThreadsBefore int            `json:"threads_before"`
	ThreadsAfter  int            `json:"threads_after"`
	FDsPerSession float64        `json:"fds_per_session"`
	// CPUPerLogin is the proxy's on-CPU time from before the logins to
	// after them, per session logged in, in microseconds (what a GC
	// setting costs shows here).
	CPUPerLogin   float64 `json:"cpu_per_login_us"`
	ProxyMeasured bool    `json:"proxy_measured"`
	// MeasurementGap says why the proxy's process was not measured, or
	// (with ProxyMeasured) why not at the end of the hold.
	MeasurementGap string `json:"measurement_note,omitempty"`

	// The proxy at rest: its RSS at the end of the hold, before the
	// liveness check, less its RSS before the logins.
	RSSAfterHoldMiB        float64 `json:"rss_after_hold_mib,omitempty"`
	RSSPerSessionAfterHold float64 `json:"rss_per_session_after_hold_kib,omitempty"`
	ThreadsAfterHold       int     `json:"threads_after_hold,omitempty"`

	// From the proxy's metrics (IdleConfig.MetricsAddr). The heap is read
	// after two forced GCs before the logins and at the end of the hold
	// (after the RSS), so it is the live heap: go_gc_heap_live_bytes where
	// the proxy has it (HeapSource), else go_memstats_heap_alloc_bytes,
	// which also counts the garbage of the heap profile request that
	// forced the second GC (about the same before and after, so it mostly
	// cancels out of the figure per session). Heap in use (the spans
	// holding live objects, with the free slots among them) and stacks are
	// read then too. Goroutines are counted before the logins, right after
	// them (after the RSS, without a GC) and at the end of the hold.
	HeapMeasured   bool    `json:"heap_measured,omitempty"`
	HeapSource     string  `json:"heap_source,omitempty"`
	HeapBeforeMiB  float64 `json:"heap_before_mib,omitempty"`
	HeapAfterMiB   float64 `json:"heap_after_mib,omitempty"`
	HeapPerSession float64 `json:"heap_per_session_kib,omitempty"`
	// HeapAllocPerSession is the figure from go_memstats_heap_alloc_bytes
	// whatever HeapSource is, to compare with proxies that lack the other.
	HeapAllocPerSession  float64 `json:"heap_alloc_per_session_kib,omitempty"`
	HeapInuseBeforeMiB   float64 `json:"heap_inuse_before_mib,omitempty"`
	HeapInuseAfterMiB    float64 `json:"heap_inuse_after_mib,omitempty"`
	HeapInusePerSession  float64 `json:"heap_inuse_per_session_kib,omitempty"`
	StackInuseAfterMiB   float64 `json:"stack_inuse_after_mib,omitempty"`
	GoroutinesBefore     int     `json:"goroutines_before,omitempty"`
	GoroutinesAfterLogin int     `json:"goroutines_after_login,omitempty"`
	GoroutinesAfterHold  int     `json:"goroutines_after_hold,omitempty"`
	HeapProfile          string  `json:"heap_profile,omitempty"`
	HeapProfileBefore    string  `json:"heap_profile_before,omitempty"`
	// GC work over the logins: cycles (go_gc_duration_seconds_count) and,
	// where the proxy has go_cpu_classes_gc_total_cpu_seconds_total, the
	// GC's CPU per session logged in, in microseconds.
	GCCycles           int     `json:"gc_cycles_during_logins,omitempty"`
	GCCPUPerLogin      float64 `json:"gc_cpu_per_login_us,omitempty"`
	HeapMeasurementGap string  `json:"heap_measurement_note,omitempty"`
}

// goSample is what the proxy's metrics say of its Go runtime.
type goSample struct {
	heap, live, heapInuse, stackInuse float64
	hasLive                           bool
	goroutines                        int
	gcCycles                          int
	gcCPU                             float64 // seconds
	hasGCCPU                          bool
}

// readGo scrapes the proxy's metrics, after two forced GCs when gc is set.
func readGo(ctx context.Context, m *gometrics.Client, gc bool) (goSample, error) {
	v, err := m.Sample(ctx, gc)
	if err != nil {
		return goSample{}, err
	}
	for _, k := range []string{"go_memstats_heap_alloc_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_goroutines"} {
		if _, ok := v[k]; !ok {
			return goSample{}, fmt.Errorf("idle: %s/metrics lacks %s", m.Base, k)
		}
	}
	live, hasLive := v["go_gc_heap_live_bytes"]
	gcCPU, hasGCCPU := v["go_cpu_classes_gc_total_cpu_seconds_total"]
	return goSample{heap: v["go_memstats_heap_alloc_bytes"], live: live, hasLive: hasLive, heapInuse: v["go_memstats_heap_inuse_bytes"],
		stackInuse: v["go_memstats_stack_inuse_bytes"], goroutines: int(v["go_goroutines"]),
		gcCycles: int(v["go_gc_duration_seconds_count"]), gcCPU: gcCPU, hasGCCPU: hasGCCPU}, nil
}

// BeforeProfilePath is where the probe saves the heap profile taken before
// the logins when the one at the end of the hold goes to path: heap.pb.gz
// and heap-before.pb.gz, for go tool pprof -base.
func BeforeProfilePath(path string) string {
	dir, base := filepath.Split(path)
	if i := strings.IndexByte(base, '.'); i > 0 {
		return dir + base[:i] + "-before" + base[i:]
	}
	return path + "-before"
}

type worker struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	done chan error
}

func (w *worker) read() (WorkerReport, error) {
	var r WorkerReport
	if !w.out.Scan() {
		return r, fmt.Errorf("worker pid %d ended without a report: %v", w.cmd.Process.Pid, w.out.Err())
	}
	if err := json.Unmarshal(w.out.Bytes(), &r); err != nil {
		return r, fmt.Errorf("worker pid %d report %q: %w", w.cmd.Process.Pid, w.out.Text(), err)
	}
	return r, nil
}

// Idle runs the probe: it measures the proxy, starts the workers, waits for
// their sessions, measures again, holds, and checks that every session
// still echoes.
func Idle(ctx context.Context, cfg IdleConfig) (*IdleResult, error) {
	if cfg.Sessions < 1 || cfg.Workers < 1 {
		return nil, fmt.Errorf("idle: sessions %d and workers %d must be at least 1", cfg.Sessions, cfg.Workers)
	}
	res := &IdleResult{Sessions: cfg.Sessions, Workers: cfg.Workers, Failures: map[string]int{}}
	var before procstat.Sample
	var probeErr error
	if len(cfg.PIDs) > 0 {
		before, probeErr = procstat.Read(cfg.PIDs)
	} else {
		probeErr = errors.New("no proxy process to measure (--addr given)")
	}
	var m *gometrics.Client
	var goBefore goSample
	var heapErr error
	if cfg.MetricsAddr != "" {
		m = gometrics.New(cfg.MetricsAddr)
		if heapErr = m.WaitReady(ctx, 10*time.Second); heapErr == nil {
			goBefore, heapErr = readGo(ctx, m, true)
		}
		if heapErr == nil && cfg.HeapProfile != "" {
			p := BeforeProfilePath(cfg.HeapProfile)
			if heapErr = m.SaveHeapProfile(ctx, p, false); heapErr == nil {
				res.HeapProfileBefore = p
			}
		}
	}
	srcs := make([]string, len(cfg.Sources))
	for i, s := range cfg.Sources {
		srcs[i] = s.String()
	}
	var workers []*worker
	defer func() {
		for _, w := range workers {
			w.in.Close()
			go func() { w.done <- w.cmd.Wait() }()
			select {
			case <-w.done:
			case <-time.After(10 * time.Second):
				w.cmd.Process.Kill()
				<-w.done
			}
		}
	}()
	per, extra := cfg.Sessions/cfg.Workers, cfg.Sessions%cfg.Workers
	for id := 0; id < cfg.Workers; id++ {
		n := per
		if id < extra {
			n++
		}
		if n == 0 {
			continue
		}
		argv := append(append([]string{}, cfg.WorkerCommand...), "--addr", cfg.Addr, "--id", strconv.Itoa(id),
			"--count", strconv.Itoa(n), "--parallel", strconv.Itoa(max(cfg.Parallel, 1)), "--sources", strings.Join(srcs, ","),
			"--timeout", cfg.Timeout.String())
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, fmt.Errorf("idle worker %d: %w", id, err)
		}
		outPipe, err := cmd.StdoutPipe()
		if err != nil {
			return nil, fmt.Errorf("idle worker %d: %w", id, err)
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting idle worker %d (%s): %w", id, argv[0], err)
		}
		w := &worker{cmd: cmd, in: in, out: bufio.NewScanner(outPipe), done: make(chan error, 1)}
		w.out.Buffer(make([]byte, 64<<10), 1<<20)
		workers = append(workers, w)
	}
	for _, w := range workers {
		r, err := w.read()
		if err != nil {
			return nil, err
		}
		res.LoggedIn += r.OK
		for k, v := range r.Reasons {
			res.Failures["login: "+k] += v
		}
	}
	if probeErr == nil {
		var after procstat.Sample
		if after, probeErr = procstat.Read(cfg.PIDs); probeErr == nil && res.LoggedIn > 0 {
			res.ProxyMeasured = true
			res.RSSBeforeMiB = float64(before.RSSBytes) / (1 << 20)
			res.RSSAfterMiB = float64(after.RSSBytes) / (1 << 20)
			res.RSSPerSession = float64(after.RSSBytes-before.RSSBytes) / 1024 / float64(res.LoggedIn)
			res.ThreadsBefore, res.ThreadsAfter = before.Threads, after.Threads
			res.FDsPerSession = float64(after.FDs-before.FDs) / float64(res.LoggedIn)
			res.CPUPerLogin = float64(after.CPUNs-before.CPUNs) / 1e3 / float64(res.LoggedIn)
		}
	}
	if probeErr != nil {
		res.MeasurementGap = probeErr.Error()
	}
	if m != nil && heapErr == nil {
		var g goSample
		if g, heapErr = readGo(ctx, m, false); heapErr == nil {
			res.GoroutinesAfterLogin = g.goroutines
			// goBefore's count includes its own two forced GCs.
			res.GCCycles = g.gcCycles - goBefore.gcCycles
			if g.hasGCCPU && goBefore.hasGCCPU && res.LoggedIn > 0 {
				res.GCCPUPerLogin = (g.gcCPU - goBefore.gcCPU) * 1e6 / float64(res.LoggedIn)
			}
		}
	}
	holdStart := time.Now()
	select {
	case <-time.After(cfg.Hold):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.HoldSeconds = time.Since(holdStart).Seconds()
	if res.ProxyMeasured {
		if rest, err := procstat.Read(cfg.PIDs); err != nil {
			res.MeasurementGap = fmt.Sprintf("the proxy at the end of the hold: %v", err)
		} else {
			res.RSSAfterHoldMiB = float64(rest.RSSBytes) / (1 << 20)
			res.RSSPerSessionAfterHold = float64(rest.RSSBytes-before.RSSBytes) / 1024 / float64(res.LoggedIn)
			res.ThreadsAfterHold = rest.Threads
		}
	}
	if m != nil && heapErr == nil && res.LoggedIn > 0 {
		heapErr = res.readHeap(ctx, m, goBefore, cfg.HeapProfile)
	}
	if heapErr != nil {
		res.HeapMeasurementGap = heapErr.Error()
	}
	for _, w := range workers {
		if _, err := io.WriteString(w.in, "check\n"); err != nil {
			return res, fmt.Errorf("idle worker pid %d: %w", w.cmd.Process.Pid, err)
		}
	}
	for _, w := range workers {
		r, err := w.read()
		if err != nil {
			return res, err
		}
		res.Alive += r.OK
		for k, v := range r.Reasons {
			res.Failures[k] += v
		}
	}
	return res, nil
}

// readHeap reads the proxy's live heap at rest (after two forced GCs), as
// figures per session against before, and saves its heap profile.
func (res *IdleResult) readHeap(ctx context.Context, m *gometrics.Client, before goSample, profile string) error {
	g, err := readGo(ctx, m, true)
	if err != nil {
		return err
	}
	const mib = 1 << 20
	n := float64(res.LoggedIn)
	res.HeapMeasured = true
	b, a := before.heap, g.heap
	res.HeapSource = "go_memstats_heap_alloc_bytes"
	if before.hasLive && g.hasLive {
		b, a = before.live, g.live
		res.HeapSource = "go_gc_heap_live_bytes"
	}
	res.HeapBeforeMiB, res.HeapAfterMiB = b/mib, a/mib
	res.HeapPerSession = (a - b) / 1024 / n
	res.HeapAllocPerSession = (g.heap - before.heap) / 1024 / n
	res.HeapInuseBeforeMiB, res.HeapInuseAfterMiB = before.heapInuse/mib, g.heapInuse/mib
	res.HeapInusePerSession = (g.heapInuse - before.heapInuse) / 1024 / n
	res.StackInuseAfterMiB = g.stackInuse / mib
	res.GoroutinesBefore, res.GoroutinesAfterHold = before.goroutines, g.goroutines
	if profile != "" {
		// The GCs above were the last: the profile's in-use figures are the live heap.
		if err := m.SaveHeapProfile(ctx, profile, false); err != nil {
			return err
		}
		res.HeapProfile = profile
	}
	return nil
}

// ioReason labels a failed echo without addresses, so failures group.
func ioReason(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed"
	case strings.Contains(err.Error(), "reset"):
		return "reset"
	case strings.Contains(err.Error(), "differs"):
		return "wrong echo"
	}
	return "error"
}
