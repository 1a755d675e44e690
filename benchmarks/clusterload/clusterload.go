// Package clusterload measures what sharing player state in Redis costs a
// login: it starts a redis-server, the fake Minecraft backend and, trial by
// trial, a tidegate proxy with cluster: on and off (alternating which goes
// first), storms it with logins (mcload.Handshake) and reports logins per
// second, the proxy's CPU per login and the Redis round trips per login
// (tidegate_cluster_redis_roundtrips_total, counted by a go-redis hook).
package clusterload

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tidegate/tidegate/benchmarks/gometrics"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/mcload"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/procstat"
)

// Config is a cluster benchmark.
type Config struct {
	// Tidegate is the tidegate binary (proxy and backend).
	Tidegate string
	// Redis is the redis-server program.
	Redis string
	// Count logins per trial, Parallel of them at once.
	Count, Parallel int
	// Repeats is the number of on/off pairs.
	Repeats int
	// ProxyCores is the proxy's loops.
	ProxyCores int
	// Sources are the local addresses the logins come from.
	Sources []net.IP
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

// Trial is one storm against one proxy.
type Trial struct {
	Cluster        bool    `json:"cluster"`
	Accepted       int     `json:"accepted"`
	Failed         int     `json:"failed"`
	Seconds        float64 `json:"seconds"`
	LoginsPerSec   float64 `json:"logins_per_sec"`
	CPUMicrosPer   float64 `json:"proxy_cpu_us_per_login"`
	RoundTripsPer  float64 `json:"redis_roundtrips_per_login"`
	Fallbacks      int64   `json:"cluster_fallbacks"`
	P99Ms          float64 `json:"p99_ms"`
	RejectedReason string  `json:"rejected,omitempty"`
}

// Summary is one mode's figures over the trials that had no failure.
type Summary struct {
	LoginsPerSec  harness.Spread `json:"logins_per_sec"`
	CPUMicrosPer  harness.Spread `json:"proxy_cpu_us_per_login"`
	RoundTripsPer harness.Spread `json:"redis_roundtrips_per_login"`
	P99Ms         harness.Spread `json:"p99_ms"`
}

// Result is the whole run.
type Result struct {
	Count    int     `json:"count"`
	Parallel int     `json:"parallel"`
	Trials   []Trial `json:"trials"`
	On       Summary `json:"cluster_on"`
	Off      Summary `json:"cluster_off"`
}

// Run runs the benchmark.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if cfg.Repeats < 1 || cfg.Count < 1 || cfg.Parallel < 1 {
		return nil, fmt.Errorf("cluster bench: repeats %d, count %d and parallel %d must be at least 1", cfg.Repeats, cfg.Count, cfg.Parallel)
	}
	redisAddr, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		return nil, err
	}
	_, rport, _ := net.SplitHostPort(redisAddr)
	redis, err := harness.Start(ctx, harness.ChildSpec{Name: "redis", Listen: redisAddr,
		Argv: []string{cfg.Redis, "--port", rport, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning"}})
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", cfg.Redis, err)
	}
	defer redis.Stop()
	backendAddr, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		return nil, err
	}
	backend, err := peers.StartBackend(peers.BackendSpec{Listen: backendAddr, Loops: 1, Executable: cfg.Tidegate})
	if err != nil {
		return nil, err
	}
	defer backend.Stop()
	res := &Result{Count: cfg.Count, Parallel: cfg.Parallel}
	// The two modes alternate: on first in even repeats, off first in odd.
	err = harness.Rotate(cfg.Repeats, 2, func(r, _, i int) error {
		on := i == 0
		tr, err := trial(ctx, cfg, backendAddr, "redis://"+redisAddr+"/0", on)
		if err != nil {
			return err
		}
		cfg.Log("repeat %d cluster %v: %.0f logins/s, %.1f µs CPU/login, %.2f Redis round trips/login, %d failed",
			r+1, on, tr.LoginsPerSec, tr.CPUMicrosPer, tr.RoundTripsPer, tr.Failed)
		res.Trials = append(res.Trials, tr)
		return nil
	})
	res.On, res.Off = summarize(res.Trials, true), summarize(res.Trials, false)
	return res, err
}

func summarize(ts []Trial, on bool) Summary {
	ok := harness.Keep(ts, func(t Trial) bool { return t.Cluster == on && t.Failed == 0 })
	s := Summary{LoginsPerSec: harness.SpreadOf(ok, func(t Trial) float64 { return t.LoginsPerSec }),
		CPUMicrosPer: harness.SpreadOf(ok, func(t Trial) float64 { return t.CPUMicrosPer }),
		P99Ms:        harness.SpreadOf(ok, func(t Trial) float64 { return t.P99Ms })}
	if on {
		// With the cluster off there is no Redis to count round trips to.
		s.RoundTripsPer = harness.SpreadOf(ok, func(t Trial) float64 { return t.RoundTripsPer })
	}
	return s
}

// WriteTable writes every trial, then the medians [min–max] of each mode,
// as Markdown tables.
func WriteTable(w io.Writer, res *Result) error {
	if _, err := fmt.Fprintf(w, "cluster bench: %d logins per trial, %d in parallel\n", res.Count, res.Parallel); err != nil {
		return err
	}
	trials := make([][]string, 0, len(res.Trials))
	for i, t := range res.Trials {
		trials = append(trials, []string{strconv.Itoa(i + 1), strconv.FormatBool(t.Cluster), harness.Fixed(t.LoginsPerSec, 0),
			harness.Fixed(t.CPUMicrosPer, 1), harness.Fixed(t.RoundTripsPer, 2), harness.Fixed(t.P99Ms, 2),
			strconv.Itoa(t.Failed) + " " + t.RejectedReason, strconv.FormatInt(t.Fallbacks, 10)})
	}
	if err := harness.MarkdownTable(w, []string{"trial", "cluster", "logins/s", "proxy CPU µs/login", "Redis round trips/login",
		"p99 ms", "failed", "fallbacks"}, "rlrrrrrr", trials); err != nil {
		return err
	}
	// The modes' column has no heading: "| |", which MarkdownTable would
	// write with two spaces.
	var b strings.Builder
	b.WriteString("\n| | logins/s | proxy CPU µs/login | Redis round trips/login | p99 ms |\n|---|--:|--:|--:|--:|\n")
	for _, m := range []struct {
		name string
		s    Summary
	}{{"cluster on", res.On}, {"cluster off", res.Off}} {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", m.name, m.s.LoginsPerSec.Format(0), m.s.CPUMicrosPer.Format(1),
			m.s.RoundTripsPer.Format(2), m.s.P99Ms.Format(2))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// proxyConfig is the proxy's configuration: peers.TidegateConfig (no
// per-address limits), with the cluster on Redis when on.
func proxyConfig(listen, backend, redisURL string, cores, sessions int, on bool) string {
	y := peers.TidegateConfig(peers.RelayConfig{Listen: listen, Backend: backend, Cores: cores, Sessions: sessions}, false)
	if on {
		y += fmt.Sprintf("cluster: {redis: %q, id: bench-proxy, heartbeat: 5s, timeout: 1s, login_wait: 2s}\n", redisURL)
	}
	return y
}

// trial starts a proxy, storms it and stops it.
func trial(ctx context.Context, cfg Config, backend, redisURL string, on bool) (Trial, error) {
	listen, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		return Trial{}, err
	}
	metrics, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		return Trial{}, err
	}
	dir, err := os.MkdirTemp("", "tidegate-cluster-bench-")
	if err != nil {
		return Trial{}, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "proxy.yaml")
	if err := os.WriteFile(path, []byte(proxyConfig(listen, backend, redisURL, cfg.ProxyCores, cfg.Parallel*2+64, on)), 0o600); err != nil {
		return Trial{}, err
	}
	p, err := harness.Start(ctx, harness.ChildSpec{Name: "tidegate-proxy", Listen: listen, Dir: dir,
		Argv: []string{cfg.Tidegate, "proxy", "--config", path, "--metrics-listen", metrics, "--log-level", "warn"}})
	if err != nil {
		return Trial{}, err
	}
	defer p.Stop()
	pid := p.PID()
	rt0, _, err := scrape(ctx, metrics)
	if err != nil {
		return Trial{}, err
	}
	cpu0, err := procstat.CPU(pid)
	if err != nil {
		return Trial{}, err
	}
	hs, err := mcload.Handshake(ctx, mcload.HandshakeConfig{Addr: listen, Count: cfg.Count, Parallel: cfg.Parallel, Sources: cfg.Sources})
	if err != nil {
		return Trial{}, err
	}
	// The releases of the last sessions are counted too.
	time.Sleep(200 * time.Millisecond)
	cpu1, err := procstat.CPU(pid)
	if err != nil {
		return Trial{}, err
	}
	rt1, fb, err := scrape(ctx, metrics)
	if err != nil {
		return Trial{}, err
	}
	t := Trial{Cluster: on, Accepted: hs.Accepted, Failed: hs.Failed, Seconds: hs.Seconds, LoginsPerSec: hs.AcceptedPerSec, P99Ms: hs.P99Ms, Fallbacks: fb}
	if hs.Accepted > 0 {
		t.CPUMicrosPer = float64(cpu1-cpu0) / 1e3 / float64(hs.Accepted)
		t.RoundTripsPer = float64(rt1-rt0) / float64(hs.Accepted)
	}
	for _, k := range hs.SortedRejections() {
		t.RejectedReason = fmt.Sprintf("%s x%d", k, hs.Rejections[k])
		break
	}
	return t, nil
}

// scrape reads the Redis round trips and the fallbacks from the proxy's
// /metrics (0 without the cluster).
func scrape(ctx context.Context, addr string) (roundTrips, fallbacks int64, err error) {
	vals, err := gometrics.New(addr).Scrape(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("scraping the proxy: %w", err)
	}
	for name, v := range vals {
		switch {
		case name == "tidegate_cluster_redis_roundtrips_total":
			roundTrips = int64(v)
		case strings.HasPrefix(name, "tidegate_cluster_fallbacks_total{"):
			fallbacks += int64(v)
		}
	}
	return roundTrips, fallbacks, nil
}
