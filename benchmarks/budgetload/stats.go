package budgetload

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// Slack is what the claim allows above the budget: the proxy's peak RSS
// must stay under budget + Slack.
const Slack = 64 << 20

// Plateau decides when a sampled figure has stopped growing: when no
// sample for StableFor has passed the highest one seen before by more than
// the larger of MinStep and Frac of it.
type Plateau struct {
	StableFor time.Duration
	MinStep   int64
	Frac      float64

	peak     int64
	grewAt   time.Duration
	started  bool
	lastSeen time.Duration
}

// Add records the sample v taken at t (since the start of the flood) and
// reports whether the figure has been stable for StableFor.
func (p *Plateau) Add(t time.Duration, v int64) bool {
	p.lastSeen = t
	step := max(p.MinStep, int64(p.Frac*float64(p.peak)))
	if !p.started || v > p.peak+step {
		p.grewAt = t
		p.started = true
	}
	p.peak = max(p.peak, v)
	return t-p.grewAt >= p.StableFor
}

// Peak returns the highest sample so far.
func (p *Plateau) Peak() int64 { return p.peak }

// ParseSize parses a byte count: a plain integer or one with a binary
// suffix KiB, MiB or GiB (K, M, G are the same).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a non-negative integer with an optional KiB, MiB or GiB suffix", s)
	}
	if n > (1<<63-1)/mult {
		return 0, fmt.Errorf("size %q: more than 2^63-1 bytes", s)
	}
	return n * mult, nil
}

// FormatSize writes n in the largest binary unit that divides it exactly
// (bytes otherwise): 256MiB, 1GiB, 1000.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// ParseSizes parses a comma-separated list of sizes (ParseSize).
func ParseSizes(list string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(list, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		n, err := ParseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no size in %q", list)
	}
	return out, nil
}

// Failures lists why the trial failed the byte-for-byte check: sessions
// not verified, errors, a trial that could not run. Empty means it passed;
// the RSS bound is a finding, reported by WithinBound, not a failure.
func (t *Trial) Failures() []string {
	var f []string
	if t.Err != "" {
		f = append(f, "trial: "+t.Err)
	}
	if t.Verified != t.Sessions {
		f = append(f, fmt.Sprintf("%d of %d sessions verified", t.Verified, t.Sessions))
	}
	if t.ErrorCount > 0 {
		f = append(f, fmt.Sprintf("%d session errors, first: %s", t.ErrorCount, strings.Join(t.Errors, "; ")))
	}
	return f
}

// WithinBound reports whether the flood's peak RSS stayed under
// budget + Slack.
func (t *Trial) WithinBound() bool { return t.PeakRSS < t.Budget+Slack }

// Summary is one budget's figures over its repeats.
type Summary struct {
	Budget   int64
	Trials   int
	Baseline harness.Spread // MiB
	Peak     harness.Spread // MiB
	Growth   harness.Spread // peak − baseline, MiB
	Drain    harness.Spread // seconds
	Flood    harness.Spread // seconds to the plateau
	Paused   harness.Spread // paused connections at the plateau
	Heap     harness.Spread // Go heap in use at the plateau, MiB
	Verified int            // sessions verified, all trials
	Sessions int            // sessions, all trials
	Within   int            // trials whose peak stayed under budget + Slack
	Failed   int            // trials with Failures
}

// Summarize groups trials by budget, in the order budgets first appear.
func Summarize(trials []Trial) []Summary {
	var order []int64
	by := map[int64][]Trial{}
	for _, t := range trials {
		if _, ok := by[t.Budget]; !ok {
			order = append(order, t.Budget)
		}
		by[t.Budget] = append(by[t.Budget], t)
	}
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	var out []Summary
	for _, b := range order {
		s := Summary{Budget: b, Trials: len(by[b])}
		for _, t := range by[b] {
			s.Verified += t.Verified
			s.Sessions += t.Sessions
		}
		// A trial that lost or corrupted a byte, or did not run through,
		// measured a proxy that did not work: no figure of it counts.
		ok := harness.Keep(by[b], func(t Trial) bool { return len(t.Failures()) == 0 })
		s.Failed = s.Trials - len(ok)
		s.Within = len(harness.Keep(ok, func(t Trial) bool { return t.WithinBound() }))
		s.Baseline = harness.SpreadOf(ok, func(t Trial) float64 { return mib(t.BaselineRSS) })
		s.Peak = harness.SpreadOf(ok, func(t Trial) float64 { return mib(t.PeakRSS) })
		s.Growth = harness.SpreadOf(ok, func(t Trial) float64 { return mib(t.PeakRSS - t.BaselineRSS) })
		s.Drain = harness.SpreadOf(ok, func(t Trial) float64 { return t.Drain.Seconds() })
		s.Flood = harness.SpreadOf(ok, func(t Trial) float64 { return t.Flood.Seconds() })
		// -1: the figure could not be scraped.
		s.Paused = harness.SpreadOf(harness.Keep(ok, func(t Trial) bool { return t.Paused >= 0 }), func(t Trial) float64 { return float64(t.Paused) })
		s.Heap = harness.SpreadOf(harness.Keep(ok, func(t Trial) bool { return t.HeapInuse >= 0 }), func(t Trial) float64 { return mib(t.HeapInuse) })
		out = append(out, s)
	}
	return out
}

// WriteTable writes the summaries as a Markdown table, then one line per
// trial.
func WriteTable(w io.Writer, trials []Trial) error {
	var sums [][]string
	for _, s := range Summarize(trials) {
		sums = append(sums, []string{FormatSize(s.Budget), fmt.Sprintf("%d MiB", (s.Budget+Slack)>>20), s.Baseline.Format(0),
			s.Peak.Format(0), s.Growth.Format(0), fmt.Sprintf("%d/%d", s.Within, s.Trials), s.Heap.Format(0), s.Paused.Format(0),
			s.Flood.Format(1), s.Drain.Format(1), fmt.Sprintf("%d/%d", s.Verified, s.Sessions), strconv.Itoa(s.Failed)})
	}
	if err := harness.MarkdownTable(w, []string{"budget", "bound (budget + 64 MiB)", "baseline RSS MiB", "peak RSS MiB",
		"peak − baseline MiB", "within bound", "Go heap in use at plateau MiB", "paused conns at plateau", "flood to plateau s",
		"drain s", "sessions verified", "failed trials"}, "", sums); err != nil {
		return err
	}
	rows := make([][]string, 0, len(trials))
	for i, t := range trials {
		res := "ok"
		if f := t.Failures(); len(f) > 0 {
			res = strings.Join(f, "; ")
		}
		rows = append(rows, []string{strconv.Itoa(i + 1), FormatSize(t.Budget), strconv.FormatInt(t.BaselineRSS>>20, 10),
			strconv.FormatInt(t.PeakRSS>>20, 10), strconv.FormatInt(t.DrainPeakRSS>>20, 10), strconv.FormatBool(t.Stable),
			strconv.FormatInt(t.SentAtPlateau>>20, 10), harness.Fixed(t.Drain.Seconds(), 1), fmt.Sprintf("%d/%d", t.Verified, t.Sessions), res})
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return harness.MarkdownTable(w, []string{"#", "budget", "baseline RSS MiB", "peak RSS MiB (flood)", "peak RSS MiB (drain)",
		"stable", "sent at plateau MiB", "drain s", "verified", "result"}, "", rows)
}
