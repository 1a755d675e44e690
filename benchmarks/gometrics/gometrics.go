// Package gometrics reads what a Go server serves on tidegate's
// --metrics-listen address: the Prometheus text of /metrics and the heap
// profile of /debug/pprof/heap, for the benchmarks that measure a server's
// memory from inside (live heap, heap in use, goroutines) next to its RSS.
package gometrics

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Client reads one server's metrics address.
type Client struct {
	// Base is the address as a URL without a trailing slash: "http://host:port".
	Base string
	// HTTP is the client used; nil means one with a 30-second timeout.
	HTTP *http.Client
}

// New returns a Client of addr, host:port or an http:// URL.
func New(addr string) *Client {
	base := strings.TrimSuffix(addr, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return &Client{Base: base}
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// Get requests path and hands the body of a 200 answer to read.
func (c *Client) Get(ctx context.Context, path string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path, nil)
	if err != nil {
		return fmt.Errorf("gometrics: request %s%s: %w", c.Base, path, err)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("gometrics: GET %s%s: %w", c.Base, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("gometrics: GET %s%s: status %s", c.Base, path, resp.Status)
	}
	if err := read(resp.Body); err != nil {
		return fmt.Errorf("gometrics: reading %s%s: %w", c.Base, path, err)
	}
	return nil
}

// Scrape reads /metrics: every sample by its name with labels, as written
// (`go_memstats_heap_alloc_bytes`, `tidegate_push_connections{kind="sse_subscriber"}`).
func (c *Client) Scrape(ctx context.Context) (map[string]float64, error) {
	vals := map[string]float64{}
	err := c.Get(ctx, "/metrics", func(r io.Reader) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == '#' {
				continue
			}
			i := strings.LastIndexByte(line, ' ')
			if i < 0 {
				continue
			}
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				vals[line[:i]] = v
			}
		}
		return sc.Err()
	})
	return vals, err
}

// CollectGarbage makes the server run two full garbage collections
// (/debug/pprof/heap?gc=1), so that its heap figures then are the live
// heap: the second one also empties the victim caches of sync.Pools, where
// gnet keeps the buffers of closed connections.
func (c *Client) CollectGarbage(ctx context.Context) error {
	for i := 0; i < 2; i++ {
		if err := c.Get(ctx, "/debug/pprof/heap?gc=1", func(r io.Reader) error {
			_, err := io.Copy(io.Discard, r)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// Sample is Scrape after CollectGarbage when gc is set, so that the heap
// figures in it are the live heap.
func (c *Client) Sample(ctx context.Context, gc bool) (map[string]float64, error) {
	if gc {
		if err := c.CollectGarbage(ctx); err != nil {
			return nil, err
		}
	}
	return c.Scrape(ctx)
}

// SaveHeapProfile writes the server's heap profile (for go tool pprof) to
// path; gc makes the server collect garbage first, so that the in-use
// figures are the live heap.
func (c *Client) SaveHeapProfile(ctx context.Context, path string, gc bool) error {
	q := ""
	if gc {
		q = "?gc=1"
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("gometrics: heap profile: %w", err)
	}
	err = c.Get(ctx, "/debug/pprof/heap"+q, func(r io.Reader) error {
		_, err := io.Copy(f, r)
		return err
	})
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("gometrics: writing the heap profile %s: %w", path, cerr)
	}
	return err
}

// WaitReady waits until /metrics answers, for at most timeout: a server
// may open its metrics address a moment after the ports it serves.
func (c *Client) WaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := c.Scrape(ctx)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
