package proxy

import (
	"testing"
	"time"

	"github.com/tidegate/tidegate/session/proxy/config"
)

func TestPickWeightsAndHealth(t *testing.T) {
	g := &group{backends: []*backend{{addr: "a", weight: 1, backendHealth: &backendHealth{}}, {addr: "b", weight: 3, backendHealth: &backendHealth{}}}}
	rnd := uint64(42)
	counts := map[string]int{}
	for i := 0; i < 40000; i++ {
		b, probe := g.pick(&rnd, 0, 0, 1)
		if probe {
			t.Fatal("a probe picked while every backend is up")
		}
		counts[b.addr]++
	}
	if r := float64(counts["b"]) / float64(counts["a"]); r < 2.7 || r > 3.3 {
		t.Fatalf("weights 1:3 gave %v", counts)
	}
	h := config.ProbeConfig{Failures: 2, Cooldown: time.Second}
	now := nowUnix()
	g.backends[1].MarkFailed(h, now, false)
	if !g.backends[1].MarkFailed(h, now, false) {
		t.Fatal("second failure did not mark the backend down")
	}
	for i := 0; i < 100; i++ {
		if b, _ := g.pick(&rnd, 0, now, 1); b.addr != "a" {
			t.Fatalf("picked %s while it is down", b.addr)
		}
	}
	g.backends[0].MarkFailed(h, now, false)
	g.backends[0].MarkFailed(h, now, false)
	if b, _ := g.pick(&rnd, 0, now+int64(time.Second)-1, 1); b != nil {
		t.Fatalf("with every backend in its cooldown, pick chose %s", b.addr)
	}
}
