package storm

import (
	"time"
)

// percentile returns the q-th percentile (0 < q <= 100) of sorted by the
// nearest-rank method: the smallest value that at least q percent of the
// values do not exceed. It is 0 for no values.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q/100*float64(len(sorted)) + 0.999999999)
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// ms converts a duration to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
