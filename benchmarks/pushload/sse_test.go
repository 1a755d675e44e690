package pushload

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/benchmarks/ssepeer"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/session/pushserver"
)

// startPeer runs the net/http SSE peer on loopback for the test.
func startPeer(t *testing.T, buffer int) (*ssepeer.Server, string, string) {
	t.Helper()
	srv, err := ssepeer.New(ssepeer.Config{PublishAddr: "127.0.0.1:0", SubscribeAddr: "127.0.0.1:0", Buffer: buffer})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return srv, srv.PublishAddr().String(), srv.SubscribeAddr().String()
}

func sseRun(pa, sa string, subscribers int) Config {
	return Config{
		PublishAddr: pa, SubscribeAddr: sa, Subscribers: subscribers, Topic: "load", SSE: true,
		Rate: 500, EventsPerFrame: 5, PayloadSize: 64,
		Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond, Drain: 2 * time.Second, ClientLoops: 1,
	}
}

// TestSSERunDeliversInOrder: 20 SSE subscribers of tidegate push and of the
// net/http peer get every event in order, with a latency for the measured
// ones.
func TestSSERunDeliversInOrder(t *testing.T) {
	_, tpa, tsa := testserver.Push(t, func(c *pushserver.Config) { c.Window = 20 * time.Millisecond })
	peer, ppa, psa := startPeer(t, 0)
	for name, addrs := range map[string][2]string{"tidegate": {tpa, tsa}, "nethttp": {ppa, psa}} {
		t.Run(name, func(t *testing.T) {
			r, err := Run(context.Background(), sseRun(addrs[0], addrs[1], 20))
			if err != nil {
				t.Fatalf("%v (%s)", err, r)
			}
			if r.TotalPublished == 0 || r.TotalDelivered != r.TotalExpected || r.OutOfOrder != 0 || r.Dropped != 0 || r.Closed != 0 {
				t.Fatalf("result %s", r)
			}
			if r.LatencySamples == 0 || r.P99 <= 0 || r.P50 > r.P99 {
				t.Fatalf("latency p50 %v p99 %v over %d samples (%s)", r.P50, r.P99, r.LatencySamples, r)
			}
		})
	}
	if st := peer.Stats(); st.SlowClosed != 0 || st.BadFrames != 0 || st.Published == 0 {
		t.Fatalf("peer stats %+v", st)
	}
}

// sseSplit cuts an SSE response into its head and then one event at a time.
func sseSplit(buf []byte) int {
	end := "\n\n"
	if bytes.HasPrefix(buf, []byte("HTTP/")) {
		end = "\r\n\r\n"
	}
	if i := bytes.Index(buf, []byte(end)); i >= 0 {
		return i + len(end)
	}
	return 0
}

// TestSSERunFailsOnDroppedOrReorderedEvent: one subscriber's fifth event
// left out, or swapped with the sixth, on its way from the net/http peer,
// must fail the run, with the result still returned.
func TestSSERunFailsOnDroppedOrReorderedEvent(t *testing.T) {
	for name, want := range map[string]string{"lost": "1 lost", "reordered": "sequence breaks"} {
		t.Run(name, func(t *testing.T) {
			_, pa, sa := startPeer(t, 0)
			var held []byte
			relay := unitRelay(t, sa, sseSplit, func(conn, unit int, raw []byte) []byte {
				if conn != 1 || (unit != 5 && unit != 6) {
					return raw
				}
				if name == "lost" {
					if unit == 5 {
						return nil
					}
					return raw
				}
				if unit == 5 {
					held = append([]byte(nil), raw...)
					return nil
				}
				return append(append([]byte(nil), raw...), held...)
			})
			r, err := Run(context.Background(), sseRun(pa, relay, 3))
			if err == nil {
				t.Fatalf("a run with a %s event passed: %s", name, r)
			}
			if r.TotalPublished == 0 || r.OutOfOrder == 0 || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, result %s: want the result, a sequence break and %q in the error", err, r, want)
			}
		})
	}
	_, pa, sa := startPeer(t, 0)
	relay := unitRelay(t, sa, sseSplit, func(_, _ int, raw []byte) []byte { return raw })
	if r, err := Run(context.Background(), sseRun(pa, relay, 3)); err != nil {
		t.Fatalf("through an unharmed relay: %v (%s)", err, r)
	}
}

// TestFailureCountsDropsApart: events a server dropped fail a run unless
// drops are allowed; lost events beyond them fail it either way.
func TestFailureCountsDropsApart(t *testing.T) {
	r := Result{TotalExpected: 100, TotalDelivered: 90, Dropped: 10, Closed: 1}
	if err := r.Failure(); err == nil || !strings.Contains(err.Error(), "10 dropped by the server (1 subscribers closed by it)") {
		t.Fatalf("drops not allowed: %v", err)
	}
	r.DropsAllowed = true
	if err := r.Failure(); err != nil {
		t.Fatalf("drops allowed: %v", err)
	}
	r.TotalDelivered = 89
	if err := r.Failure(); err == nil || !strings.Contains(err.Error(), "1 lost") {
		t.Fatalf("one lost beyond the drops: %v", err)
	}
}

func TestTextEventAndDropReport(t *testing.T) {
	p := make([]byte, MinSSEPayload+3)
	putTextEvent(p, 12345, 1_700_000_000_123456789)
	if seq, ts, ok := parseTextEvent(p); !ok || seq != 12345 || ts != 1_700_000_000_123456789 {
		t.Fatalf("parse %q: %d %d %v", p, seq, ts, ok)
	}
	if _, _, ok := parseTextEvent(p[:MinSSEPayload-1]); ok {
		t.Fatal("a short payload parsed")
	}
	if n, err := dropReport(push.AppendDropMeta(nil, 42)); err != nil || n != 42 {
		t.Fatalf("drop report: %d, %v", n, err)
	}
	if _, err := dropReport([]byte(`{"other":"x"}`)); err == nil {
		t.Fatal("a foreign meta message parsed as a drop report")
	}
}
