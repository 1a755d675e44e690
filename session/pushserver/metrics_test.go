package pushserver

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPrometheusCollector(t *testing.T) {
	srv, pub, sub := startServer(t, func(c *Config) { c.Window = 0 })
	c, lr := subscribeTCP(t, sub, "metrics")
	p := dial(t, pub)
	if _, err := p.Write(publishFrame(t, "metrics", []byte("a"), []byte("b"))); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for n := 0; n < 2; {
		evs, err := lr.next()
		if err != nil {
			t.Fatal(err)
		}
		n += len(evs)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewCollector(srv)); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP tidegate_push_published_events_total Events published.
# TYPE tidegate_push_published_events_total counter
tidegate_push_published_events_total 2
`), "tidegate_push_published_events_total"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n < 15 {
		t.Fatalf("gathered %d metrics, %v", n, err)
	}
}
