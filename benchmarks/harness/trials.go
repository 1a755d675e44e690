package harness

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

// Rotate calls run for every repeat and every position of n targets, the
// target of position pos in repeat r being Order(n, r)[pos]; it stops
// early, and returns false, when run returns false (the run was
// interrupted).
func Rotate(repeats, n int, run func(repeat, pos, target int) bool) bool {
	for r := range repeats {
		for pos, target := range Order(n, r) {
			if !run(r, pos, target) {
				return false
			}
		}
	}
	return true
}

// Values returns get of each of items that keep accepts: a figure of the
// trials that count. Failed trials are left out of a median (an errored
// run is not a sample) but stay in the report's trials.
func Values[T any](items []T, keep func(T) bool, get func(T) float64) []float64 {
	var out []float64
	for _, it := range items {
		if keep == nil || keep(it) {
			out = append(out, get(it))
		}
	}
	return out
}

// SpreadOf is Of(Values(items, keep, get)).
func SpreadOf[T any](items []T, keep func(T) bool, get func(T) float64) Spread {
	return Of(Values(items, keep, get))
}
