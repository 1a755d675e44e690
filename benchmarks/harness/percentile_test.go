package harness

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for q, want := range map[float64]time.Duration{50: 50 * time.Millisecond, 99: 99 * time.Millisecond, 100: 100 * time.Millisecond, 1: time.Millisecond} {
		if got := Percentile(d, q); got != want {
			t.Errorf("p%v of 1..100 ms = %v, want %v", q, got, want)
		}
	}
	if got := Percentile(d[:3], 50); got != 2*time.Millisecond {
		t.Errorf("p50 of 1,2,3 ms = %v", got)
	}
	if got := Percentile([]time.Duration(nil), 99); got != 0 {
		t.Errorf("p99 of nothing = %v", got)
	}
	if got := Percentile([]float64{1.5, 2.5}, 50); got != 1.5 {
		t.Errorf("p50 of 1.5, 2.5 = %v, want 1.5", got)
	}
}
