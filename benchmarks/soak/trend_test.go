package soak

import (
	"math/rand/v2"
	"testing"
)

// series returns n samples every 10 s: level, plus growth spread evenly
// over them, plus uniform noise of ±noise.
func series(n int, level, growth, noise float64, seed uint64) (xs, ys []float64) {
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range n {
		xs = append(xs, float64(10*i))
		ys = append(ys, level+growth*float64(i)/float64(n-1)+noise*(2*r.Float64()-1))
	}
	return xs, ys
}

// TestTrendFiresOnGrowth: a figure that grows by 50% over the window, with
// noise of ±10% on top, is rising under a 10% tolerance.
func TestTrendFiresOnGrowth(t *testing.T) {
	for seed := range uint64(20) {
		xs, ys := series(30, 100e6, 50e6, 10e6, seed)
		tr := TestTrend("rss", 0, xs, ys, Tolerance{Abs: 1e6, Rel: 0.10})
		if !tr.Rising {
			t.Fatalf("seed %d: growing series not rising: %+v", seed, tr)
		}
	}
	// A leak a few bytes at a time, without noise, over a short run too.
	xs, ys := series(8, 1000, 200, 0, 1)
	if tr := TestTrend("fds", 0, xs, ys, Tolerance{Abs: 64, Rel: 0.05}); !tr.Rising || tr.TStat != perfectTStat {
		t.Fatalf("noiseless leak: %+v", tr)
	}
}

// TestTrendQuietOnFlatNoise: a flat figure with noise of ±30% of its level
// (a loaded machine's latency) is never rising under a 50% tolerance, for
// any of many draws, and neither is one that shrinks.
func TestTrendQuietOnFlatNoise(t *testing.T) {
	for seed := range uint64(200) {
		xs, ys := series(12, 1000, 0, 300, seed)
		if tr := TestTrend("latency", 0, xs, ys, Tolerance{Abs: 10, Rel: 0.5}); tr.Rising {
			t.Fatalf("seed %d: flat noisy series rising: %+v", seed, tr)
		}
	}
	xs, ys := series(12, 1000, -500, 0, 1)
	if tr := TestTrend("heap", 0, xs, ys, Tolerance{}); tr.Rising {
		t.Fatalf("shrinking series rising: %+v", tr)
	}
}

// TestTrendNeedsBoth: growth past the tolerance that is noise (a low t),
// and a significant slope within the tolerance, are not trends; too few
// samples are skipped, not passed as flat.
func TestTrendNeedsBoth(t *testing.T) {
	xs := []float64{0, 10, 20, 30, 40, 50}
	if tr := TestTrend("x", 0, xs, []float64{100, 300, 90, 320, 95, 310}, Tolerance{Abs: 1}); tr.Rising || tr.Growth <= tr.Allowed {
		t.Fatalf("zig-zag: %+v, want growth past the tolerance but no trend", tr)
	}
	if tr := TestTrend("x", 0, xs, []float64{100, 101, 102, 103, 104, 105}, Tolerance{Abs: 10}); tr.Rising || tr.TStat < MinTStat {
		t.Fatalf("small steady growth: %+v, want significant but within tolerance", tr)
	}
	if tr := TestTrend("x", 0, xs[:3], []float64{1, 2, 3}, Tolerance{}); tr.Rising || tr.Skipped == "" {
		t.Fatalf("three samples: %+v, want skipped", tr)
	}
}
