package budgetload

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/benchmarks/gometrics"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/procstat"
)

// Defaults of Config.
const (
	DefaultSessions     = 2000
	DefaultBytes        = 8 << 20
	DefaultRcvBuf       = 16 << 10
	DefaultSample       = 100 * time.Millisecond
	DefaultStableFor    = 2 * time.Second
	DefaultFloodTimeout = 2 * time.Minute
	DefaultDrainTimeout = 5 * time.Minute
	DefaultConnect      = 64
)

// headerLen is the session id each client sends first (big-endian uint64),
// part of the hashed stream.
const headerLen = 8

// chunk is the size of one client write and one backend read.
const chunk = 32 << 10

// Config is one trial.
type Config struct {
	// Executable is the tidegate binary run as `EXE proxy`; empty means
	// this program.
	Executable string
	// Budget is limits.buffer_budget, at least 1 MiB.
	Budget int64
	// Sessions is the number of flooding sessions.
	Sessions int
	// Bytes is what each client sends after its header.
	Bytes int64
	// RcvBuf is SO_RCVBUF of the backend's sockets.
	RcvBuf int
	// Loops is the proxy's event loops; 0 means one per core.
	Loops int
	// Sample is the RSS sampling interval; StableFor how long the peak must
	// not grow for the flood to end; FloodTimeout ends it anyway.
	Sample, StableFor, FloodTimeout time.Duration
	// DrainTimeout bounds the drain, from release to the last verified session.
	DrainTimeout time.Duration
	// Connect is how many sessions are dialed at once before the flood.
	Connect int
	// Metrics starts the proxy with --metrics-listen, scraped at the plateau.
	Metrics bool
	// HeapProfile, with Metrics, is where the proxy's /debug/pprof/heap at
	// the plateau is written.
	HeapProfile string
	// Dir holds the proxy's configuration and log; empty means a temporary
	// directory.
	Dir string
}

func (c *Config) defaults() error {
	c.Sample = cmp.Or(c.Sample, DefaultSample)
	c.StableFor = cmp.Or(c.StableFor, DefaultStableFor)
	c.FloodTimeout = cmp.Or(c.FloodTimeout, DefaultFloodTimeout)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, DefaultDrainTimeout)
	c.Sessions = cmp.Or(c.Sessions, DefaultSessions)
	c.Bytes = cmp.Or(c.Bytes, DefaultBytes)
	c.RcvBuf = cmp.Or(c.RcvBuf, DefaultRcvBuf)
	c.Connect = cmp.Or(c.Connect, DefaultConnect)
	c.Loops = cmp.Or(c.Loops, runtime.NumCPU())
	switch {
	case c.Budget < 1<<20:
		return fmt.Errorf("budget %d bytes: the proxy wants at least 1 MiB (1048576)", c.Budget)
	case c.Sessions < 1:
		return fmt.Errorf("sessions %d: want at least 1", c.Sessions)
	case c.Bytes < 1:
		return fmt.Errorf("bytes per session %d: want at least 1", c.Bytes)
	case c.HeapProfile != "" && !c.Metrics:
		return fmt.Errorf("heap profile %s: needs Metrics (the proxy's --metrics-listen)", c.HeapProfile)
	}
	return nil
}

// Trial is what one flood measured.
type Trial struct {
	Budget   int64 `json:"budget"`
	Sessions int   `json:"sessions"`
	Bytes    int64 `json:"bytes"`
	// BaselineRSS is the proxy's RSS with every session connected, before
	// the flood; PeakRSS the highest during the flood, DrainPeakRSS the
	// highest during the drain.
	BaselineRSS  int64 `json:"baseline_rss"`
	PeakRSS      int64 `json:"peak_rss"`
	DrainPeakRSS int64 `json:"drain_peak_rss"`
	// Stable is false when the flood ended at FloodTimeout, not on a plateau.
	Stable bool `json:"stable"`
	// Flood is from the flood's start to the plateau.
	Flood time.Duration `json:"flood_ns"`
	// SentAtPlateau is what the clients had written by then.
	SentAtPlateau int64 `json:"sent_at_plateau"`
	// Paused (tidegate_proxy_paused_connections) and HeapInuse
	// (go_memstats_heap_inuse_bytes) are scraped at the plateau; -1 unknown.
	Paused    int64 `json:"paused"`
	HeapInuse int64 `json:"heap_inuse"`
	// Drain is from releasing the readers until every backend connection
	// has read to its end.
	Drain time.Duration `json:"drain_ns"`
	// Verified counts sessions whose bytes and SHA-256 matched.
	Verified   int      `json:"verified"`
	ErrorCount int      `json:"error_count"`
	Errors     []string `json:"errors,omitempty"` // the first few
	// Err is why the trial could not run.
	Err string `json:"err,omitempty"`
}

// stream is one session's bytes as its client wrote them or the backend
// read them.
type stream struct {
	n   int64
	sum [sha256.Size]byte
	err error
}

// errList keeps a count and the first few errors.
type errList struct {
	mu    sync.Mutex
	n     int
	first []string
}

func (e *errList) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if len(e.first) < 5 {
		e.first = append(e.first, err.Error())
	}
}

// payload returns session id's deterministic byte source.
func payload(id uint64) *rand.ChaCha8 {
	var seed [32]byte
	binary.BigEndian.PutUint64(seed[:], id)
	copy(seed[8:], "tidegate buffer budget")
	return rand.NewChaCha8(seed)
}

// flood writes size deterministic bytes to c after the header (already
// sent), hashing header and payload, then shuts its write side and waits
// for the backend's close (EOF) until deadline.
func flood(c *net.TCPConn, id uint64, size int64, sent *atomic.Int64, deadline <-chan struct{}) stream {
	h := sha256.New()
	var hdr [headerLen]byte
	binary.BigEndian.PutUint64(hdr[:], id)
	h.Write(hdr[:])
	src := payload(id)
	buf := make([]byte, chunk)
	s := stream{n: headerLen}
	for left := size; left > 0; {
		p := buf[:min(int64(len(buf)), left)]
		_, _ = src.Read(p)
		h.Write(p)
		n, err := c.Write(p)
		s.n += int64(n)
		sent.Add(int64(n))
		left -= int64(n)
		if err != nil {
			s.err = fmt.Errorf("client: session %d writing after %d bytes: %w", id, s.n, err)
			return s
		}
	}
	copy(s.sum[:], h.Sum(nil))
	if err := c.CloseWrite(); err != nil {
		s.err = fmt.Errorf("client: session %d shutting down its write side: %w", id, err)
		return s
	}
	go func() {
		<-deadline
		_ = c.SetReadDeadline(time.Now())
	}()
	if n, err := io.Copy(io.Discard, c); err != nil || n != 0 {
		s.err = fmt.Errorf("client: session %d waiting for the backend's close: %d bytes back, %v", id, n, err)
	}
	return s
}

// Run runs one trial: it starts the backend and the proxy, connects the
// sessions, samples the proxy's RSS through the flood until it stops
// growing, releases the readers and verifies every session.
func Run(ctx context.Context, cfg Config) (t Trial) {
	t = Trial{Budget: cfg.Budget, Sessions: cfg.Sessions, Bytes: cfg.Bytes, Paused: -1, HeapInuse: -1}
	if err := cfg.defaults(); err != nil {
		t.Err = err.Error()
		return t
	}
	t.Sessions, t.Bytes = cfg.Sessions, cfg.Bytes
	errs := &errList{}
	defer func() {
		t.ErrorCount, t.Errors = errs.n, errs.first
	}()
	be, err := startBackend(cfg.RcvBuf, cfg.Sessions, errs)
	if err != nil {
		t.Err = err.Error()
		return t
	}
	defer be.close()
	proxy, metrics, err := startProxy(ctx, cfg, be.ln.Addr().String())
	if err != nil {
		t.Err = err.Error()
		return t
	}
	defer proxy.Stop()
	pids := proxy.PIDs()
	rss := func() (int64, error) {
		s, err := procstat.Read(pids)
		if err != nil {
			return 0, fmt.Errorf("sampling the proxy (pids %v): %w", pids, err)
		}
		return s.RSSBytes, nil
	}

	// Connect every session and wait until each header reached the backend.
	conns := make([]*net.TCPConn, cfg.Sessions)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	if err := connectAll(ctx, proxy.Addr(), conns, cfg.Connect); err != nil {
		t.Err = err.Error()
		return t
	}
	for deadline := time.Now().Add(30 * time.Second); be.ids.Load() < int64(cfg.Sessions); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Err = fmt.Sprintf("%d of %d sessions reached the backend within 30s (%v)", be.ids.Load(), cfg.Sessions, ctx.Err())
			return t
		}
	}
	time.Sleep(500 * time.Millisecond) // let the connect burst settle
	if t.BaselineRSS, err = rss(); err != nil {
		t.Err = err.Error()
		return t
	}

	// Flood.
	var sent atomic.Int64
	drainDeadline := make(chan struct{})
	sentStreams := make([]stream, cfg.Sessions)
	var clients sync.WaitGroup
	start := time.Now()
	for i, c := range conns {
		clients.Add(1)
		go func() {
			defer clients.Done()
			sentStreams[i] = flood(c, uint64(i), cfg.Bytes, &sent, drainDeadline)
		}()
	}
	plateau := Plateau{StableFor: cfg.StableFor, MinStep: 1 << 20, Frac: 0.01}
	tick := time.NewTicker(cfg.Sample)
	defer tick.Stop()
	for {
		<-tick.C
		v, err := rss()
		if err != nil {
			t.Err = err.Error()
			close(drainDeadline)
			return t
		}
		el := time.Since(start)
		if plateau.Add(el, v) {
			t.Stable = true
			break
		}
		if el >= cfg.FloodTimeout || ctx.Err() != nil {
			break
		}
	}
	t.Flood, t.PeakRSS, t.SentAtPlateau = time.Since(start), plateau.Peak(), sent.Load()
	if metrics != "" {
		m := gometrics.New(metrics)
		t.Paused, t.HeapInuse = scrape(ctx, m, errs)
		if cfg.HeapProfile != "" {
			if err := m.SaveHeapProfile(ctx, cfg.HeapProfile, false); err != nil {
				errs.add(err)
			}
		}
	}

	// Drain: every backend connection reads everything.
	release := time.Now()
	close(be.release)
	read, verified := make(chan struct{}), make(chan struct{})
	go func() {
		be.done.Wait() // the probe's serve has returned long ago
		close(read)
		clients.Wait() // each client has seen the backend's close
		close(verified)
	}()
	timeout := time.NewTimer(cfg.DrainTimeout)
	defer timeout.Stop()
	t.DrainPeakRSS = 0
drain:
	for {
		select {
		case <-read:
			t.Drain, read = time.Since(release), nil
		case <-verified:
			break drain
		case <-timeout.C:
			errs.add(fmt.Errorf("drain: %d of %d sessions read to the end within %v", be.readCount(), cfg.Sessions, cfg.DrainTimeout))
			break drain
		case <-ctx.Done():
			errs.add(fmt.Errorf("drain: %w", ctx.Err()))
			break drain
		case <-tick.C:
			if v, err := rss(); err == nil {
				t.DrainPeakRSS = max(t.DrainPeakRSS, v)
			}
		}
	}
	t.Drain = cmp.Or(t.Drain, time.Since(release))
	close(drainDeadline)
	clients.Wait()
	t.Verified = verify(sentStreams, be, errs)
	if !proxy.Running() {
		errs.add(fmt.Errorf("proxy exited during the trial: %v\n%s", proxy.ExitError(), proxy.LogTail()))
	}
	return t
}

// connectAll dials conns through the proxy, limit at a time, each
// sending its header; it stops at the first failure (harness.Each).
func connectAll(ctx context.Context, addr string, conns []*net.TCPConn, limit int) error {
	d := net.Dialer{Timeout: 10 * time.Second}
	return harness.Each(ctx, len(conns), limit, func(i int) error {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			conns[i] = c.(*net.TCPConn)
			var hdr [headerLen]byte
			binary.BigEndian.PutUint64(hdr[:], uint64(i))
			_, err = c.Write(hdr[:])
		}
		if err != nil {
			return fmt.Errorf("session %d: connecting to the proxy at %s: %w", i, addr, err)
		}
		return nil
	})
}

// startProxy writes a raw-mode configuration relaying to backend with the
// budget and starts `EXE proxy`; metrics is its --metrics-listen address
// when cfg.Metrics is set.
func startProxy(ctx context.Context, cfg Config, backend string) (p *harness.Child, metrics string, err error) {
	exe := cfg.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, "", fmt.Errorf("locating this program to run as the proxy: %w", err)
		}
	}
	listen, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		return nil, "", err
	}
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "tidegate-budget-"); err != nil {
			return nil, "", fmt.Errorf("proxy work directory: %w", err)
		}
		defer func() {
			if err != nil {
				os.RemoveAll(dir)
			}
		}()
	}
	text := peers.TidegateConfig(peers.RelayConfig{Listen: listen, Backend: backend, Cores: cfg.Loops, Sessions: cfg.Sessions}, true)
	if !strings.HasSuffix(text, "\n") || !strings.Contains(text, "\nlimits:\n") {
		return nil, "", fmt.Errorf("peers.TidegateConfig has no trailing limits section to add buffer_budget to:\n%s", text)
	}
	text += fmt.Sprintf("  buffer_budget: %d\n", cfg.Budget)
	path := filepath.Join(dir, "tidegate.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return nil, "", fmt.Errorf("writing the proxy configuration %s: %w", path, err)
	}
	argv := []string{exe, "proxy", "--config", path, "--log-level", "warn"}
	if cfg.Metrics {
		if metrics, err = harness.FreeAddr("127.0.0.1"); err != nil {
			return nil, "", err
		}
		// --pprof: the heap figures come from /debug/pprof/heap.
		argv = append(argv, "--metrics-listen", metrics, "--pprof")
	}
	p, err = harness.Start(ctx, harness.ChildSpec{Name: "tidegate-raw", Listen: listen, Argv: argv, Dir: dir,
		RemoveDir: cfg.Dir == "", Env: []string{"GOMAXPROCS=" + strconv.Itoa(cfg.Loops)}})
	if err != nil {
		return nil, "", err
	}
	return p, metrics, nil
}

// scrape reads tidegate_proxy_paused_connections and
// go_memstats_heap_inuse_bytes from the proxy's /metrics (-1 when absent).
func scrape(ctx context.Context, m *gometrics.Client, errs *errList) (paused, heap int64) {
	paused, heap = -1, -1
	vals, err := m.Scrape(ctx)
	if err != nil {
		errs.add(fmt.Errorf("scraping the proxy's metrics: %w", err))
		return
	}
	if v, ok := vals["tidegate_proxy_paused_connections"]; ok {
		paused = int64(v)
	}
	if v, ok := vals["go_memstats_heap_inuse_bytes"]; ok {
		heap = int64(v)
	}
	return paused, heap
}

// Series runs repeats rounds of one trial per budget, alternating the
// budgets within each round; each trial's HeapProfile, when profileDir is
// set, is DIR/heap-BUDGET-ROUND.pb.gz. progress, when set, is called after
// each trial.
func Series(ctx context.Context, base Config, budgets []int64, repeats int, profileDir string, progress func(Trial)) ([]Trial, error) {
	if repeats < 1 {
		return nil, fmt.Errorf("repeats %d: want at least 1", repeats)
	}
	var out []Trial
	for r := 0; r < repeats; r++ {
		for _, b := range budgets {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			cfg := base
			cfg.Budget = b
			if profileDir != "" {
				cfg.HeapProfile = filepath.Join(profileDir, fmt.Sprintf("heap-%s-%d.pb.gz", FormatSize(b), r+1))
			}
			t := Run(ctx, cfg)
			out = append(out, t)
			if progress != nil {
				progress(t)
			}
		}
	}
	return out, nil
}

// Failed reports whether any trial failed.
func Failed(trials []Trial) error {
	var all []string
	for i, t := range trials {
		for _, f := range t.Failures() {
			all = append(all, fmt.Sprintf("trial %d (budget %s): %s", i+1, FormatSize(t.Budget), f))
		}
	}
	if len(all) > 0 {
		return errors.New(strings.Join(all, "\n"))
	}
	return nil
}
