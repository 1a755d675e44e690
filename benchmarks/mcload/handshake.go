package mcload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/mcclient"
	"github.com/tidegate/tidegate/benchmarks/sockopt"
)

// HandshakeConfig is a login storm.
type HandshakeConfig struct {
	// Addr is the proxy (or server) to log in through.
	Addr string
	// Count is the number of logins; Parallel of them are in progress at once.
	Count, Parallel int
	// Sources are the local addresses connections are spread over.
	Sources []net.IP
	// Timeout bounds each login, connect included; 0 means 10 s.
	Timeout time.Duration
}

// HandshakeResult is what a storm measured.
type HandshakeResult struct {
	Addr           string         `json:"addr"`
	Count          int            `json:"count"`
	Parallel       int            `json:"parallel"`
	Accepted       int            `json:"accepted"`
	Failed         int            `json:"failed"`
	Seconds        float64        `json:"seconds"`
	AcceptedPerSec float64        `json:"accepted_per_sec"`
	Rejections     map[string]int `json:"rejections,omitempty"`
	// Time from starting the connect to seeing Login Success, accepted logins only.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// Handshake runs the storm: each attempt connects, sends Handshake and
// Login Start, waits for Login Success (accepted) or a refusal, and closes.
func Handshake(ctx context.Context, cfg HandshakeConfig) (*HandshakeResult, error) {
	if cfg.Count < 1 || cfg.Parallel < 1 {
		return nil, fmt.Errorf("handshake: count %d and parallel %d must be at least 1", cfg.Count, cfg.Parallel)
	}
	cfg.Timeout = cmp.Or(cfg.Timeout, 10*time.Second)
	host, port, err := mcclient.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, err
	}
	var next atomic.Int64
	var mu sync.Mutex
	hist := harness.NewLatencyHistogram()
	res := &HandshakeResult{Addr: cfg.Addr, Count: cfg.Count, Parallel: cfg.Parallel, Rejections: map[string]int{}}
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < min(cfg.Parallel, cfg.Count); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4096)
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.Count || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				reason := attempt(ctx, cfg, sockopt.SourceDialer(cfg.Sources, i), host, port, fmt.Sprintf("hs%d", i), buf)
				d := time.Since(t0)
				mu.Lock()
				if reason == "" {
					res.Accepted++
					_ = hist.RecordValue(max(int64(d), 1_000))
				} else {
					res.Failed++
					res.Rejections[reason]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.AcceptedPerSec = float64(res.Accepted) / res.Seconds
	}
	res.P50Ms = float64(hist.ValueAtQuantile(50)) / 1e6
	res.P99Ms = float64(hist.ValueAtQuantile(99)) / 1e6
	res.MaxMs = float64(hist.Max()) / 1e6
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// attempt makes one login and returns "" when it reached play, else the
// reason it did not.
func attempt(ctx context.Context, cfg HandshakeConfig, d *net.Dialer, host string, port uint16, name string, buf []byte) string {
	deadline := time.Now().Add(cfg.Timeout)
	cctx, cancel := context.WithDeadline(ctx, deadline)
	c, err := d.DialContext(cctx, "tcp", cfg.Addr)
	cancel()
	if err != nil {
		return connectReason(err)
	}
	defer c.Close()
	_, err = mcclient.Login(c, host, port, name, buf, deadline)
	if err == nil {
		return ""
	}
	var le *mcclient.LoginError
	if errors.As(err, &le) {
		if le.Reason == "disconnect" {
			return "disconnect: " + le.Message
		}
		return le.Reason
	}
	return err.Error()
}

// SortedRejections returns the rejection reasons, most frequent first.
func (r *HandshakeResult) SortedRejections() []string { return harness.ByCount(r.Rejections) }
