package harness

import "cmp"

// Percentile returns the q-th percentile (0 < q <= 100) of sorted by the
// nearest-rank method: the smallest value that at least q percent of the
// values do not exceed. It is the zero value for no values.
func Percentile[T cmp.Ordered](sorted []T, q float64) T {
	if len(sorted) == 0 {
		var zero T
		return zero
	}
	rank := int(q/100*float64(len(sorted)) + 0.999999999)
	return sorted[min(max(rank, 1), len(sorted))-1]
}
