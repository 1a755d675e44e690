package harness

import "math"

// Order returns the targets' order in repeat r of n targets: rotated by r,
// so that each target runs first as often as the others and none always
// follows the same one (a warm cache, a busy neighbour).
func Order(n, r int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (i + r) % n
	}
	return out
}

// Rotate is the trial loop: it calls run for every repeat and every
// position of n targets, the target of position pos in repeat r being
// Order(n, r)[pos]. A failed trial is run's to record (it stays in the
// report, out of the medians); an error from run ends the loop (the run
// was interrupted or cannot go on) and Rotate returns it.
func Rotate(repeats, n int, run func(repeat, pos, target int) error) error {
	for r := range repeats {
		for pos, target := range Order(n, r) {
			if err := run(r, pos, target); err != nil {
				return err
			}
		}
	}
	return nil
}

// Keep returns the items that keep accepts, in their order: the trials
// whose figures count. A failed trial is left out of a median (an errored
// run is not a sample) but stays in the report's trials.
func Keep[T any](items []T, keep func(T) bool) []T {
	var out []T
	for _, it := range items {
		if keep(it) {
			out = append(out, it)
		}
	}
	return out
}

// SpreadOf returns the spread of get over items: one figure of the trials
// that count.
func SpreadOf[T any](items []T, get func(T) float64) Spread {
	vals := make([]float64, len(items))
	for i, it := range items {
		vals[i] = get(it)
	}
	return Of(vals)
}

// SpreadOfPresent returns the spread of get over the items that have the
// figure: get returns nil (or a NaN) where an item did not measure it.
func SpreadOfPresent[T any](items []T, get func(T) *float64) Spread {
	var vals []float64
	for _, it := range items {
		if v := get(it); v != nil && !math.IsNaN(*v) {
			vals = append(vals, *v)
		}
	}
	return Of(vals)
}
