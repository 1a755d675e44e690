package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/lifecycle"
	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
)

// TestIdleMetricsConnectionsLeaveLoginsAlone runs the proxy with its demo
// backend under a descriptor limit of 256 and opens more keep-alive
// connections to its metrics address than the limit has descriptors, each
// sending one GET and then idling: the address serves its cap's worth,
// leaves the rest in the backlog, and players log in through the proxy as
// if none were there. Before the cap, 270 such connections under a limit of
// 300 made logins fail (accept4: too many open files).
func TestIdleMetricsConnectionsLeaveLoginsAlone(t *testing.T) {
	const nofile, conns, logins = 256, 250, 8
	listen, backend, metrics := freePort(t), freePort(t), freePort(t)
	cfgPath := filepath.Join(t.TempDir(), "proxy.yaml")
	cfgText := fmt.Sprintf("listeners: [{listen: %q}]\ndefault_group: main\ngroups:\n  main: {backends: [{addr: %q}]}\nloops: 1\n", listen, backend)
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	ch := startChild(t, nofile, "proxy", "--config", cfgPath, "--demo", "--metrics-listen", metrics)
	waitListening(t, ch, listen)
	waitHealthy(t, ch, metrics)

	var idle []net.Conn
	t.Cleanup(func() {
		for _, c := range idle {
			c.Close()
		}
	})
	for i := range conns {
		c, err := net.DialTimeout("tcp", metrics, 5*time.Second)
		if err != nil {
			t.Fatalf("metrics connection %d: %v", i, err)
		}
		idle = append(idle, c)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+metrics+"\r\n\r\n"); err != nil {
			t.Fatalf("metrics connection %d: %v", i, err)
		}
	}
	// The backlog is first in, first out: the first cap connections are
	// the ones served, and the next one waits.
	for i, c := range idle[:lifecycle.DefaultMetricsMaxConns] {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("metrics connection %d of the cap: %v", i, err)
		}
		resp.Body.Close()
	}
	next := idle[lifecycle.DefaultMetricsMaxConns]
	_ = next.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if n, err := next.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("metrics connection past the cap: read %d bytes, %v; want it waiting in the backlog", n, err)
	}

	for i := range logins {
		b := gomcbot.Join(t, listen, fmt.Sprintf("Player%d", i), 30*time.Second)
		b.Echo(t, []byte("with the metrics address full"))
		_ = b.Client.Close()
	}
	if !ch.running() {
		t.Fatalf("the proxy exited: %v", <-ch.done)
	}
}
