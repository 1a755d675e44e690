package soak

import (
	"fmt"
	"math"
)

// Tolerance is how much a figure may grow over a segment's post-warm-up
// samples before the soak calls it a trend: Abs in the figure's unit, or
// Rel of its mean level, whichever is larger.
type Tolerance struct {
	Abs float64 `json:"abs"`
	Rel float64 `json:"rel"`
}

// allowed is the growth the tolerance allows at a mean level of mean.
func (t Tolerance) allowed(mean float64) float64 { return max(t.Abs, t.Rel*math.Abs(mean)) }

// MinTrendSamples is the fewest samples a segment needs for its slope to be
// tested: with fewer a line through them says nothing.
const MinTrendSamples = 4

// MinTStat is the t statistic a slope must reach, besides its growth, to
// count as a trend: a flat series whose noise happens to tilt its line has
// a t near 0; growth that goes on sample after sample has a large one.
const MinTStat = 3

// perfectTStat stands for the t statistic of samples exactly on a sloped
// line (an infinite one, which JSON cannot hold).
const perfectTStat = 1e9

// Trend is the slope test of one figure over one segment.
type Trend struct {
	Figure  string `json:"figure"`
	Segment int    `json:"segment"`
	Samples int    `json:"samples"`
	// Mean is the figure's mean over the samples, SlopePerHour the
	// least-squares slope in its unit per hour, Growth the slope times the
	// samples' span (what the line grew by over them), Allowed the growth
	// the tolerance allows at Mean, TStat the slope over its standard error.
	Mean         float64 `json:"mean"`
	SlopePerHour float64 `json:"slope_per_hour"`
	Growth       float64 `json:"growth"`
	Allowed      float64 `json:"allowed"`
	TStat        float64 `json:"t_stat"`
	// Rising is the verdict: Growth > Allowed and TStat >= MinTStat.
	// Skipped says why a segment was not tested (too few samples).
	Rising  bool   `json:"rising"`
	Skipped string `json:"skipped,omitempty"`
}

// TestTrend fits a least-squares line to ys against xs (seconds) and
// calls it rising when it grows by more than tol allows over the span of
// xs and its slope is at least MinTStat standard errors above zero.
func TestTrend(figure string, segment int, xs, ys []float64, tol Tolerance) Trend {
	t := Trend{Figure: figure, Segment: segment, Samples: len(ys)}
	if len(xs) != len(ys) {
		t.Skipped = fmt.Sprintf("%d times for %d values", len(xs), len(ys))
		return t
	}
	if len(ys) < MinTrendSamples {
		t.Skipped = fmt.Sprintf("%d samples, fewer than %d", len(ys), MinTrendSamples)
		return t
	}
	n := float64(len(ys))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	t.Mean = my
	if sxx == 0 {
		t.Skipped = "every sample at the same time"
		return t
	}
	slope := sxy / sxx
	var sse float64
	for i := range xs {
		r := ys[i] - (my + slope*(xs[i]-mx))
		sse += r * r
	}
	stderr := math.Sqrt(sse / (n - 2) / sxx)
	switch {
	case stderr > 0:
		t.TStat = slope / stderr
	case slope > 0:
		t.TStat = perfectTStat // a perfect line: as significant as it gets
	case slope < 0:
		t.TStat = -perfectTStat
	}
	t.SlopePerHour = slope * 3600
	t.Growth = slope * (xs[len(xs)-1] - xs[0])
	t.Allowed = tol.allowed(my)
	t.Rising = t.Growth > t.Allowed && t.TStat >= MinTStat
	return t
}
