// Package pausedcost measures what connections that are held back and see
// no traffic cost a `tidegate push` or a raw-mode `tidegate proxy`, against
// the same server with no connection: the method of `bench drain` (which
// does it for `serve`), for the other two servers. Each trial starts a fresh
// server, samples its CPU (the sum of field 1 of /proc/PID/task/*/schedstat)
// and its wake-ups (field 3) over an idle window, holds Conns connections
// back, waits until nothing moves, and samples again. The rest of the
// machine's CPU over each window is given beside them.
//
// Push: Conns SSE subscribers with a small SO_RCVBUF that never read, and
// one publisher that publishes events of EventSize bytes until the server
// holds output for every subscriber (its queued-bytes gauge), then stops.
// Proxy: Conns raw-mode sessions to a backend that accepts and never reads;
// each client writes until the proxy stops reading it (its paused gauge).
package pausedcost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/gometrics"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/procstat"
	"github.com/tidegate/tidegate/benchmarks/sockopt"
	"github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/protocol/tlv"
)

// smallBuffer is the SO_RCVBUF of the stalled backend's and the stuck
// subscribers' sockets and the SO_SNDBUF of the sessions' clients: 4 KiB, so
// that the server's own queue, not the kernel's, holds what does not move.
const smallBuffer = 4096

// Targets the tool measures.
const (
	TargetPush  = "push"
	TargetProxy = "proxy"
)

// Server is one build to measure.
type Server struct{ Label, Binary string }

// Config is one series of trials.
type Config struct {
	// Target is TargetPush or TargetProxy.
	Target string
	// Servers are measured in turn, their order rotating each repeat.
	Servers []Server
	// Conns is the connections held back at once; Loops the server's loops.
	Conns, Loops, Repeats int
	// IdleWindow and Window are the sampling windows without connections
	// and with every connection held back; Settle the pause before each.
	IdleWindow, Window, Settle time.Duration
	// EventSize is the payload of each push event.
	EventSize int
	// Log gets progress lines.
	Log zerolog.Logger
}

// Trial is one server's run.
type Trial struct {
	Repeat, Pos int
	Server      string
	// IdleCPU and PausedCPU are percent of one core; IdleRuns and
	// PausedRuns wake-ups per second; IdleOther and PausedOther the rest
	// of the machine's CPU, percent of one core.
	IdleCPU, PausedCPU, IdleRuns, PausedRuns, IdleOther, PausedOther float64
	// Held is the connections held back (push: every subscriber, once the
	// queued-bytes gauge passed an event per subscriber; proxy: its paused
	// gauge); QueuedKiB is push's queued bytes per subscriber then.
	Held      int
	QueuedKiB float64
	Error     string
}

// Run runs cfg.Repeats rounds of one trial per server.
func Run(ctx context.Context, cfg Config) ([]Trial, error) {
	if cfg.Target != TargetPush && cfg.Target != TargetProxy {
		return nil, fmt.Errorf("pausedcost: target %q: want %q or %q", cfg.Target, TargetPush, TargetProxy)
	}
	if len(cfg.Servers) == 0 || cfg.Conns < 1 || cfg.Repeats < 1 || cfg.Window <= 0 || cfg.IdleWindow <= 0 {
		return nil, fmt.Errorf("pausedcost: %d servers, %d conns, %d repeats, windows %v / %v: need at least one of each and positive windows",
			len(cfg.Servers), cfg.Conns, cfg.Repeats, cfg.IdleWindow, cfg.Window)
	}
	var trials []Trial
	err := harness.Rotate(cfg.Repeats, len(cfg.Servers), func(repeat, pos, target int) error {
		t := runTrial(ctx, cfg, cfg.Servers[target])
		t.Repeat, t.Pos = repeat, pos
		cfg.Log.Info().Str("server", t.Server).Float64("idle_cpu", t.IdleCPU).Float64("paused_cpu", t.PausedCPU).
			Int("held", t.Held).Str("error", t.Error).Msg("trial done")
		trials = append(trials, t)
		return ctx.Err()
	})
	return trials, err
}

func runTrial(ctx context.Context, cfg Config, srv Server) (t Trial) {
	t.Server = srv.Label
	proc, addrs, metrics, stopBackend, err := start(ctx, cfg, srv)
	if err != nil {
		if stopBackend != nil {
			stopBackend()
		}
		t.Error = err.Error()
		return t
	}
	defer func() {
		if stopBackend != nil {
			stopBackend() // first: the proxy's drain on SIGTERM then ends at once
		}
		if err := proc.Stop(); err != nil && t.Error == "" {
			t.Error = fmt.Sprintf("stopping the server: %v", err)
		}
	}()
	pids := proc.PIDs()
	_ = harness.Sleep(ctx, cfg.Settle)
	idle, err := procstat.SampleWindow(ctx, pids, cfg.IdleWindow)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	t.IdleCPU, t.IdleRuns, t.IdleOther = idle.Pct, idle.Runs, idle.Other
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = c.Close()
		}
	}()
	m := gometrics.New(metrics)
	if cfg.Target == TargetPush {
		conns, err = holdSubscribers(ctx, cfg, addrs, m, &t)
	} else {
		conns, err = holdSessions(ctx, cfg, addrs[0], m, &t)
	}
	if err != nil {
		t.Error = err.Error()
		return t
	}
	_ = harness.Sleep(ctx, cfg.Settle)
	paused, err := procstat.SampleWindow(ctx, pids, cfg.Window)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	t.PausedCPU, t.PausedRuns, t.PausedOther = paused.Pct, paused.Runs, paused.Other
	if !proc.Running() {
		t.Error = "the server exited during the trial"
	}
	return t
}

// start starts the server; addrs are push's publish and subscribe
// addresses, or the proxy's listener and its backend's.
func start(ctx context.Context, cfg Config, srv Server) (_ *harness.Child, _ []string, _ string, stopBackend func(), _ error) {
	metrics, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		return nil, nil, "", stopBackend, err
	}
	listen, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		return nil, nil, "", stopBackend, err
	}
	env := []string{"GOMAXPROCS=" + strconv.Itoa(cfg.Loops)}
	if cfg.Target == TargetPush {
		pub, err := harness.FreeAddr("127.0.0.1")
		if err != nil {
			return nil, nil, "", stopBackend, err
		}
		argv := []string{srv.Binary, "push", "--publish-listen", pub, "--subscribe-listen", listen, "--metrics-listen", metrics,
			"--loops", strconv.Itoa(cfg.Loops), "--not-writable-timeout", "0", "--stats-interval", "0", "--log-level", "warn"}
		p, err := harness.Start(ctx, harness.ChildSpec{Name: "push-" + srv.Label, Listen: listen, Argv: argv, Env: env})
		return p, []string{pub, listen}, metrics, nil, err
	}
	be, err := startBackend()
	if err != nil {
		return nil, nil, "", stopBackend, err
	}
	backend := be.ln.Addr().String()
	stopBackend = be.close
	dir, err := os.MkdirTemp("", "tidegate-paused-")
	if err != nil {
		return nil, nil, "", stopBackend, fmt.Errorf("proxy work directory: %w", err)
	}
	text := peers.TidegateConfig(peers.RelayConfig{Listen: listen, Backend: backend, Cores: cfg.Loops, Sessions: cfg.Conns}, true)
	path := filepath.Join(dir, "tidegate.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return nil, nil, "", stopBackend, fmt.Errorf("writing the proxy configuration %s: %w", path, err)
	}
	argv := []string{srv.Binary, "proxy", "--config", path, "--metrics-listen", metrics, "--log-level", "warn"}
	p, err := harness.Start(ctx, harness.ChildSpec{Name: "proxy-" + srv.Label, Listen: listen, Argv: argv, Dir: dir, RemoveDir: true, Env: env})
	return p, []string{listen, backend}, metrics, stopBackend, err
}

// backend accepts connections on loopback and holds them without reading,
// with a small receive buffer, until close.
type backend struct {
	ln   net.Listener
	mu   sync.Mutex
	held []net.Conn
}

func startBackend() (*backend, error) {
	lc := net.ListenConfig{Control: sockopt.Control(smallBuffer, 0, 0)}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("pausedcost: backend listen: %w", err)
	}
	b := &backend{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.held = append(b.held, c)
			b.mu.Unlock()
		}
	}()
	return b, nil
}

func (b *backend) close() {
	_ = b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.held {
		_ = c.Close()
	}
}

// holdSubscribers connects cfg.Conns SSE subscribers that never read and
// publishes until the server holds output for each.
func holdSubscribers(ctx context.Context, cfg Config, addrs []string, m *gometrics.Client, t *Trial) ([]net.Conn, error) {
	const topic = "paused"
	d := net.Dialer{Timeout: 5 * time.Second, Control: sockopt.Control(smallBuffer, 0, 0)}
	req := "GET /events?topic=" + url.QueryEscape(topic) + " HTTP/1.1\r\nHost: pausedcost\r\n\r\n"
	var conns []net.Conn
	for i := 0; i < cfg.Conns; i++ {
		c, err := d.DialContext(ctx, "tcp", addrs[1])
		if err != nil {
			return conns, fmt.Errorf("pausedcost: subscriber %d: dial %s: %w", i, addrs[1], err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte(req)); err != nil {
			return conns, fmt.Errorf("pausedcost: subscriber %d: request: %w", i, err)
		}
	}
	if err := waitGauge(ctx, m, `tidegate_push_connections{kind="sse_subscriber"}`, float64(cfg.Conns), 30*time.Second); err != nil {
		return conns, err
	}
	pc, err := d.DialContext(ctx, "tcp", addrs[0])
	if err != nil {
		return conns, fmt.Errorf("pausedcost: publisher: dial %s: %w", addrs[0], err)
	}
	defer pc.Close()
	payload := make([]byte, cfg.EventSize)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}
	body, err := push.AppendPublish(nil, []byte(topic), payload)
	if err != nil {
		return conns, fmt.Errorf("pausedcost: publish frame: %w", err)
	}
	frame := tlv.DefaultFormat.AppendFrame(nil, tlv.Header{Type: push.TypePublish}, body)
	// Each subscriber's kernel buffers take a few hundred KiB on loopback:
	// publish until the server itself holds a batch for every one.
	want := float64(cfg.Conns) * float64(cfg.EventSize)
	for deadline := time.Now().Add(60 * time.Second); ; {
		for range 4 {
			if _, err := pc.Write(frame); err != nil {
				return conns, fmt.Errorf("pausedcost: publish: %w", err)
			}
		}
		time.Sleep(250 * time.Millisecond)
		v, err := m.Scrape(ctx)
		if err != nil {
			return conns, fmt.Errorf("pausedcost: scraping push's metrics: %w", err)
		}
		if q := v["tidegate_push_queued_bytes"]; q >= want {
			t.Held = cfg.Conns
			break
		}
		if time.Now().After(deadline) {
			return conns, fmt.Errorf("pausedcost: push holds %.0f bytes for %d stuck subscribers after 60s, want %.0f", v["tidegate_push_queued_bytes"], cfg.Conns, want)
		}
	}
	time.Sleep(cfg.Settle) // the last batches' windows end
	v, err := m.Scrape(ctx)
	if err != nil {
		return conns, fmt.Errorf("pausedcost: scraping push's metrics: %w", err)
	}
	t.QueuedKiB = v["tidegate_push_queued_bytes"] / float64(cfg.Conns) / 1024
	return conns, nil
}

// holdSessions opens cfg.Conns raw sessions and writes on each until the
// proxy stops reading it.
func holdSessions(ctx context.Context, cfg Config, addr string, m *gometrics.Client, t *Trial) ([]net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, Control: sockopt.Control(0, smallBuffer, 0)}
	var conns []net.Conn
	for i := 0; i < cfg.Conns; i++ {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return conns, fmt.Errorf("pausedcost: session %d: dial %s: %w", i, addr, err)
		}
		conns = append(conns, c)
	}
	// Each session writes until a write blocks for a second: the proxy's
	// queue toward the stalled backend is past its watermark. All at once,
	// so that the first are not held back long before the last.
	errs := make(chan error, len(conns))
	for i, c := range conns {
		go func() {
			chunk := make([]byte, 64<<10)
			for {
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := c.Write(chunk); err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						err = nil
					} else {
						err = fmt.Errorf("pausedcost: session %d: write: %w", i, err)
					}
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for range conns {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return conns, first
	}
	// Under TCP memory pressure the kernel may hold some writers back
	// before the proxy does: the gauge is taken once it stops growing.
	held, err := stableGauge(ctx, m, "tidegate_proxy_paused_connections", 3*time.Second, 60*time.Second)
	if err != nil {
		return conns, err
	}
	if t.Held = int(held); t.Held == 0 {
		return conns, errors.New("pausedcost: the proxy paused no session")
	}
	return conns, nil
}

// waitGauge waits until metric reaches want.
func waitGauge(ctx context.Context, m *gometrics.Client, metric string, want float64, timeout time.Duration) error {
	var last float64
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); {
		v, err := m.Scrape(ctx)
		if err != nil {
			return fmt.Errorf("pausedcost: scraping %s: %w", metric, err)
		}
		if last = v[metric]; last >= want {
			return nil
		}
		if err := harness.Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("pausedcost: %s is %.0f after %v, want %.0f", metric, last, timeout, want)
}

// stableGauge returns metric once it has not grown for quiet, or when
// timeout has passed.
func stableGauge(ctx context.Context, m *gometrics.Client, metric string, quiet, timeout time.Duration) (float64, error) {
	best, since := -1.0, time.Now()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline) && time.Since(since) < quiet; {
		v, err := m.Scrape(ctx)
		if err != nil {
			return 0, fmt.Errorf("pausedcost: scraping %s: %w", metric, err)
		}
		if v[metric] > best {
			best, since = v[metric], time.Now()
		}
		if err := harness.Sleep(ctx, 250*time.Millisecond); err != nil {
			return 0, err
		}
	}
	return best, nil
}
