package harness

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestOrderRotates(t *testing.T) {
	for r, want := range [][]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 1, 2}} {
		if got := Order(3, r); !slices.Equal(got, want) {
			t.Errorf("Order(3, %d) = %v, want %v", r, got, want)
		}
	}
}

func TestRotateVisitsEveryTrialAndStops(t *testing.T) {
	var seen []string
	err := Rotate(2, 2, func(r, pos, target int) error {
		seen = append(seen, fmt.Sprintf("%d/%d:%d", r, pos, target))
		return nil
	})
	if want := []string{"0/0:0", "0/1:1", "1/0:1", "1/1:0"}; err != nil || !slices.Equal(seen, want) {
		t.Errorf("Rotate = %v, visited %v; want nil, %v", err, seen, want)
	}
	n := 0
	stop := errors.New("interrupted")
	err = Rotate(3, 2, func(int, int, int) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Errorf("Rotate = %v after %d calls, want the error of the third and no more", err, n)
	}
}

func TestSpreadOfLeavesOutFailedTrials(t *testing.T) {
	type trial struct {
		rate   float64
		failed bool
	}
	ts := []trial{{10, false}, {1000, true}, {30, false}}
	ok := Keep(ts, func(t trial) bool { return !t.failed })
	if s := SpreadOf(ok, func(t trial) float64 { return t.rate }); s != (Spread{Median: 20, Min: 10, Max: 30, N: 2}) {
		t.Errorf("SpreadOf = %+v, want the two passed trials' 20 [10–30]", s)
	}
	if s := SpreadOf(Keep(ts, func(trial) bool { return false }), func(t trial) float64 { return t.rate }); s.N != 0 {
		t.Errorf("SpreadOf of no trial = %+v, want N 0", s)
	}
}

func TestSpreadOfPresentSkipsMissingFigures(t *testing.T) {
	one, nan, three := 1.0, math.NaN(), 3.0
	vals := []*float64{&one, nil, &nan, &three}
	if s := SpreadOfPresent(vals, func(v *float64) *float64 { return v }); s != (Spread{Median: 2, Min: 1, Max: 3, N: 2}) {
		t.Errorf("SpreadOfPresent = %+v, want 2 [1–3] of the two present", s)
	}
}
