package storm

import (
	"fmt"
	"slices"
	"strconv"
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

// Spread is one figure over the repeats of a target: its median, least and
// greatest value, and how many repeats had it (a latency needs at least one
// served connection).
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// SpreadOf returns the median (the mean of the two middle values for an
// even count), minimum and maximum of vals; N is 0 for none.
func SpreadOf(vals []float64) Spread {
	if len(vals) == 0 {
		return Spread{}
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Format writes the spread as "median [min–max]" with decimals digits
// after the point, or "–" when no repeat had the figure.
func (s Spread) Format(decimals int) string {
	if s.N == 0 {
		return "–"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', decimals, 64) }
	return fmt.Sprintf("%s [%s–%s]", f(s.Median), f(s.Min), f(s.Max))
}

// ms converts a duration to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
