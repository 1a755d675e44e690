package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// greetingBackend answers every connection with its name and a newline.
func greetingBackend(t *testing.T, name string) string {
	t.Helper()
	return testserver.Conns(t, func(c net.Conn) { _, _ = io.WriteString(c, name+"\n") })
}

// reachedBackend connects through the proxy and returns the name the
// backend greeted with.
func reachedBackend(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the greeting through the proxy: %v", err)
	}
	return strings.TrimSpace(line)
}

// TestSIGHUPReloadsTheConfig: SIGHUP re-reads the file: new sessions take
// the new route; a broken file is refused with the process still serving
// the last good configuration; both are counted in /metrics.
func TestSIGHUPReloadsTheConfig(t *testing.T) {
	a, b := greetingBackend(t, "a"), greetingBackend(t, "b")
	listen, metrics := freePort(t), freePort(t)
	path := filepath.Join(t.TempDir(), "proxy.yaml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const token = "reload-test-token-0123456789"
	tokenFile := writeToken(t, token)
	conf := func(backend string) string {
		return fmt.Sprintf("listeners: [{listen: %q, mode: raw, group: main}]\ngroups: {main: {backends: [{addr: %q}]}}\n", listen, backend) +
			adminSection(tokenFile)
	}
	write(conf(a))
	ch := startChild(t, 0, "proxy", "--config", path, "--metrics-listen", metrics, "--log-level", "info")
	waitListening(t, ch, listen)
	if got := reachedBackend(t, listen); got != "a" {
		t.Fatalf("before the reload: reached %q, want a", got)
	}
	healthPID(t, metrics) // the metrics server is up (it starts after the listeners)
	hup := func() {
		t.Helper()
		if err := ch.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	metric := func(line string) bool {
		_, body := get(t, metrics, "/metrics")
		return strings.Contains(string(body), line)
	}

	write(conf(b))
	hup()
	waitfor.For(t, "the ok reload in /metrics", func() bool { return metric(`tidegate_config_reloads_total{result="ok"} 1`) })
	if got := reachedBackend(t, listen); got != "b" {
		t.Fatalf("after the reload: reached %q, want b", got)
	}

	write(conf(a) + "limits: {connect_timeout: -3s}\n")
	hup()
	waitfor.For(t, "the failed reload in /metrics", func() bool { return metric(`tidegate_config_reloads_total{result="failed"} 1`) })
	if !ch.running() {
		t.Fatal("a bad configuration on SIGHUP ended the process")
	}
	if got := reachedBackend(t, listen); got != "b" {
		t.Fatalf("after a refused reload: reached %q, want b (the last good configuration)", got)
	}

	// The same through the metrics address: POST /-/reload with the token
	// of admin.token_file.
	post := func() (int, string) {
		t.Helper()
		return postReload(t, metrics, token)
	}
	if code, body := post(); code != http.StatusConflict || !strings.Contains(body, "connect_timeout") {
		t.Fatalf("POST /-/reload of the broken file: %d %q, want 409 naming connect_timeout", code, body)
	}
	write(conf(a))
	if code, body := post(); code != http.StatusOK {
		t.Fatalf("POST /-/reload: %d %q, want 200", code, body)
	}
	if got := reachedBackend(t, listen); got != "a" {
		t.Fatalf("after POST /-/reload: reached %q, want a", got)
	}
	if !metric(`tidegate_config_reloads_total{result="ok"} 2`) || !metric(`tidegate_config_reloads_total{result="failed"} 2`) {
		t.Fatal("the reloads through /-/reload are not counted")
	}
}
