package harness

// This file reads the pid a tidegate process names on its /healthz, which
// tells the tools that upgrade a proxy (bench upgrade, bench soak) which
// process serves.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// NoKeepAlive returns an HTTP client with timeout that opens a new
// connection for every request: a connection to the old process of a live
// upgrade must not be reused once the new one serves.
func NoKeepAlive(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

// HealthPID reads the "pid" field of GET /healthz at addr (host:port or an
// http:// URL) with c, and the answer's status code: an unhealthy process
// still says who it is. A body without a pid is an error.
func HealthPID(ctx context.Context, c *http.Client, addr string) (pid, status int, err error) {
	url := strings.TrimSuffix(addr, "/")
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	url += "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("request %s: %w", url, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, resp.StatusCode, fmt.Errorf("reading %s: %w", url, err)
	}
	var body struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(b, &body); err != nil || body.PID == 0 {
		return 0, resp.StatusCode, fmt.Errorf("%s (%s) has no pid: %.200q", url, resp.Status, b)
	}
	return body.PID, resp.StatusCode, nil
}
