package harness

// A Spread summarizes one figure over the repeats of a benchmark: its
// median, least and greatest value and how many repeats had it. Every load
// generator reports its figures this way, so that "median [min–max]" means
// the same in each report.

import (
	"fmt"
	"slices"
	"strconv"
)

// Spread is one figure over the repeats that had it.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// N is the number of values; 0 means no repeat had the figure (a
	// latency needs at least one served request, a CPU figure a process).
	N int `json:"n"`
}

// Of returns the median (the mean of the two middle values for an even
// count), minimum and maximum of vals; N is 0 for none. Callers leave out
// the values of runs that failed: an errored run is not a sample.
func Of(vals []float64) Spread {
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

// Format writes the spread as "median [min–max]" with decimals digits after
// the point, or "–" when no repeat had the figure.
func (s Spread) Format(decimals int) string {
	if s.N == 0 {
		return "–"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', decimals, 64) }
	return fmt.Sprintf("%s [%s–%s]", f(s.Median), f(s.Min), f(s.Max))
}

// Short is Format, but a figure from a single repeat is written alone: a
// range of one value says nothing.
func (s Spread) Short(decimals int) string {
	if s.N == 1 {
		return strconv.FormatFloat(s.Median, 'f', decimals, 64)
	}
	return s.Format(decimals)
}
