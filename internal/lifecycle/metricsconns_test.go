package lifecycle

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/fdbudget"
)

// serveCapped serves a registry's metrics on loopback with a cap of
// maxConns and an idle timeout of idle, shut down when the test ends.
func serveCapped(t *testing.T, maxConns int, idle time.Duration) *MetricsServer {
	t.Helper()
	// Profiles on, for the test of a profile under the timeouts.
	m, err := ServeMetrics(NewRegistry(), MetricsOptions{Addr: "127.0.0.1:0", Log: zerolog.Nop(), MaxConns: maxConns, IdleTimeout: idle, Policy: testPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("metrics shutdown: %v", err)
		}
	})
	return m
}

// keepAlive is a raw keep-alive HTTP/1.1 connection to the metrics
// listener, closed when the test ends.
type keepAlive struct {
	c net.Conn
	r *bufio.Reader
}

func dialKeepAlive(t *testing.T, m *MetricsServer) *keepAlive {
	t.Helper()
	c, err := net.Dial("tcp", m.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &keepAlive{c: c, r: bufio.NewReader(c)}
}

// get sends GET /healthz and reads the answer within d.
func (k *keepAlive) get(d time.Duration) error {
	if _, err := io.WriteString(k.c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		return err
	}
	return k.answer(d)
}

// answer reads one response to a request already sent, within d.
func (k *keepAlive) answer(d time.Duration) error {
	_ = k.c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(k.r, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /healthz: %s", resp.Status)
	}
	return nil
}

// TestMetricsClosesAnIdleKeepAlive: a keep-alive connection that asked
// once and then says nothing is closed by the listener after its idle
// timeout, not held for ever.
func TestMetricsClosesAnIdleKeepAlive(t *testing.T) {
	const idle = 300 * time.Millisecond
	m := serveCapped(t, 4, idle)
	k := dialKeepAlive(t, m)
	if err := k.get(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = k.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := k.r.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read on an idle keep-alive: %d bytes, %v; want EOF from the idle timeout", n, err)
	}
	if took := time.Since(start); took < idle/2 {
		t.Fatalf("idle keep-alive closed after %v, before the idle timeout %v", took, idle)
	}
}

// TestMetricsHoldsAtMostItsCap: of cap+k keep-alive connections that each
// send a request, the listener serves the cap's worth, each accounted in
// the descriptor budget, and leaves the rest in the backlog; they are
// served as the first ones close, and the budget gets every descriptor
// back.
func TestMetricsHoldsAtMostItsCap(t *testing.T) {
	const maxConns, extra = 3, 2
	held := fdbudget.Held()
	m := serveCapped(t, maxConns, time.Minute)
	var conns []*keepAlive
	for range maxConns + extra {
		k := dialKeepAlive(t, m)
		if _, err := io.WriteString(k.c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, k)
	}
	var served, waiting []*keepAlive
	for _, k := range conns {
		// The backlog is first in, first out: the first cap are served.
		d := 5 * time.Second
		if len(served) == maxConns {
			d = 300 * time.Millisecond
		}
		if err := k.answer(d); err == nil {
			served = append(served, k)
		} else if isTimeout(err) {
			waiting = append(waiting, k)
		} else {
			t.Fatalf("connection %d: %v", len(served)+len(waiting), err)
		}
	}
	if len(served) != maxConns || len(waiting) != extra {
		t.Fatalf("%d served and %d waiting of %d connections, want %d and %d", len(served), len(waiting), len(conns), maxConns, extra)
	}
	if got := fdbudget.Held() - held; got != maxConns {
		t.Fatalf("descriptor budget holds %d for the metrics listener, want %d", got, maxConns)
	}
	for _, k := range served[:extra] {
		k.c.Close()
	}
	for i, k := range waiting {
		if err := k.answer(5 * time.Second); err != nil {
			t.Fatalf("waiting connection %d after others closed: %v", i, err)
		}
	}
	for _, k := range conns {
		k.c.Close()
	}
	waitfor.Value(t, "the metrics listener's descriptors back in the budget", func() int64 { return fdbudget.Held() - held },
		func(n int64) bool { return n == 0 })
}

// TestMetricsLeavesTheProxysReserve: when the descriptor budget has no room
// beside the proxy's reserve, a metrics connection is closed at once,
// unanswered and unaccounted, and counted as refused.
func TestMetricsLeavesTheProxysReserve(t *testing.T) {
	limit := fdbudget.Limit()
	t.Cleanup(func() { fdbudget.SetLimit(uint64(limit)) })
	m := serveCapped(t, 4, time.Minute)
	held := fdbudget.Held()
	// Room for no descriptor beyond those accounted and the reserve.
	fdbudget.SetLimit(uint64(fdbudget.Accounted() + metricsReserve))
	k := dialKeepAlive(t, m)
	err := k.get(5 * time.Second)
	if err == nil || isTimeout(err) {
		t.Fatalf("GET on a metrics connection that would take the reserve: %v, want it closed at once", err)
	}
	if got := fdbudget.Held() - held; got != 0 {
		t.Fatalf("descriptor budget holds %d for a refused connection", got)
	}
	fdbudget.SetLimit(uint64(limit))
	k = dialKeepAlive(t, m)
	if err := k.get(5 * time.Second); err != nil {
		t.Fatalf("GET once the budget has room: %v", err)
	}
	if body := scrape(t, m); !strings.Contains(body, "\ntidegate_metrics_connections_refused_total 1\n") {
		t.Fatalf("no refused count of 1 in /metrics:\n%s", body)
	}
}

// TestMetricsAnswersWhileAcceptingIsPaused: at the descriptor budget where
// a server stops accepting (its reserve, reactor.DefaultFDReserve, and no
// more, left free), a scrape is still answered from the reserve's half the
// metrics listener may take, and accounted while it is open.
func TestMetricsAnswersWhileAcceptingIsPaused(t *testing.T) {
	limit := fdbudget.Limit()
	t.Cleanup(func() { fdbudget.SetLimit(uint64(limit)) })
	m := serveCapped(t, 4, time.Minute)
	held := fdbudget.Held()
	fdbudget.SetLimit(uint64(fdbudget.Accounted() + reactor.DefaultFDReserve))
	if fdbudget.Room(1, reactor.DefaultFDReserve) {
		t.Fatal("the budget set has room beside the full reserve: the test tests nothing")
	}
	k := dialKeepAlive(t, m)
	if err := k.get(5 * time.Second); err != nil {
		t.Fatalf("GET while a server's accepting would be paused at the budget: %v, want an answer", err)
	}
	if got := fdbudget.Held() - held; got != 1 {
		t.Fatalf("descriptor budget holds %d for one open metrics connection, want 1", got)
	}
	k.c.Close()
	waitfor.Value(t, "the metrics connection's descriptor back in the budget", func() int64 { return fdbudget.Held() - held },
		func(n int64) bool { return n == 0 })
}

// scrape returns m's /metrics.
func scrape(t *testing.T, m *MetricsServer) string {
	t.Helper()
	resp, err := http.Get("http://" + m.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// isTimeout reports whether err is a deadline that passed.
func isTimeout(err error) bool {
	ne := net.Error(nil)
	return errors.As(err, &ne) && ne.Timeout()
}

// TestMetricsServesAProfileUnderItsTimeouts: a CPU profile still comes
// whole through the listener's read and write timeouts.
func TestMetricsServesAProfileUnderItsTimeouts(t *testing.T) {
	m := serveCapped(t, 4, time.Minute)
	resp, err := http.Get("http://" + m.Addr().String() + "/debug/pprof/profile?seconds=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || len(b) == 0 {
		t.Fatalf("/debug/pprof/profile?seconds=1: %s, %d bytes, %v", resp.Status, len(b), err)
	}
}
