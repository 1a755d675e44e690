package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// TestRestartBindsSameAddressAtOnce stops a proxy holding logged-in
// sessions (it closes them, so their ports sit in TIME-WAIT on its side) and
// starts a new one on the same address: it must bind at once.
func TestRestartBindsSameAddressAtOnce(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, mcConfig(be, "")) // stopped below, before its cleanup
	for i := 0; i < 20; i++ {
		c := dial(t, addr)
		login17(t, c, "localhost", fmt.Sprintf("Held%d", i))
		echo(t, c, []byte("before restart"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, addr2 := startProxy(t, fmt.Sprintf(`
listeners: [{listen: %q}]
default_group: main
groups: {main: {backends: [{addr: %q}]}}
`, addr, be))
	// A start that waited for TIME-WAIT to end would take 60 s (Linux); a
	// start takes milliseconds, so 10 s tells them apart on a loaded machine.
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("the new proxy took %v to bind %s", el, addr)
	}
	c := dial(t, addr2)
	login17(t, c, "localhost", "AfterRestart")
	echo(t, c, []byte("after restart"))
}

// taggingBackend accepts connections and writes tag to each.
func taggingBackend(t *testing.T, tag string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, tag)
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestListenersKeyedByWholeAddress: two raw listeners on the same port of
// two loopback addresses relay to their own groups.
func TestListenersKeyedByWholeAddress(t *testing.T) {
	backendA, backendB := taggingBackend(t, "group-a"), taggingBackend(t, "group-b")
	// The port is free on both addresses when chosen, but another test's
	// socket may take it on either before the proxy binds: choose again.
	var a, b string
	for attempt := 1; ; attempt++ {
		port := freePortOnBoth(t, "127.0.0.1", "127.0.0.2")
		a, b = fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.0.0.2:%d", port)
		cfg, err := testParseConfig(t, fmt.Sprintf(`
listeners:
  - {listen: %q, mode: raw, group: a}
  - {listen: %q, mode: raw, group: b}
groups:
  a: {backends: [{addr: %q}]}
  b: {backends: [{addr: %q}]}
`, a, b, backendA, backendB))
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(cfg, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		err = p.Start()
		if err == nil {
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := p.Stop(ctx); err != nil {
					t.Errorf("stopping proxy: %v", err)
				}
			})
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == 5 {
			t.Fatalf("starting the proxy on %s and %s (attempt %d): %v", a, b, attempt, err)
		}
	}
	for addr, want := range map[string]string{a: "group-a", b: "group-b"} {
		c := dial(t, addr)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || string(got) != want {
			t.Errorf("through %s: got %q (%v), want %q", addr, got, err, want)
		}
	}
}

// freePortOnBoth returns a TCP port that was free on both hosts.
func freePortOnBoth(t *testing.T, hostA, hostB string) int {
	t.Helper()
	for range 20 {
		la, err := net.Listen("tcp", hostA+":0")
		if err != nil {
			t.Fatal(err)
		}
		port := la.Addr().(*net.TCPAddr).Port
		lb, err := net.Listen("tcp", fmt.Sprintf("%s:%d", hostB, port))
		la.Close()
		if err == nil {
			lb.Close()
			return port
		}
	}
	t.Fatalf("no port free on both %s and %s in 20 tries", hostA, hostB)
	return 0
}

// TestShutdownDeadlineDisconnectsLogins: a player still logging in when the
// drain deadline passes gets the shutdown message; the proxy then stops.
func TestShutdownDeadlineDisconnectsLogins(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, mcConfig(be, `shutdown: {message: "Back in a minute"}`)) // shut down below
	c := dial(t, addr)
	// The handshake only: the session waits for Login Start.
	if _, err := c.Write(handshake(mc.Protocol1_7_10, "localhost", mc.NextStateLogin)); err != nil {
		t.Fatal(err)
	}
	waitStats(t, p, "the session logging in", func(st proxymetrics.Stats) bool { return st.Active == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, reactor.ErrDrainDeadline) {
		t.Fatalf("Shutdown: %v, want the drain deadline", err)
	}
	if got := readDisconnect(t, c); !strings.Contains(got, "Back in a minute") {
		t.Fatalf("disconnect %q, want the shutdown message", got)
	}
	if n := p.Stats().Rejected["shutdown"]; n != 1 {
		t.Fatalf("shutdown count %d, want 1", n)
	}
}
