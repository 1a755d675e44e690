package main

import (
	"strings"
	"testing"

	"github.com/tidegate/tidegate/benchmarks/mcload"
)

// TestIdleFailures: the idle probe fails, and so exits non-zero, for too
// few sessions alive, too much RSS, and for every figure it was to take and
// could not: the process figures of a proxy it started (before the logins
// or at the end of the hold) and the Go heap --heap asked for.
func TestIdleFailures(t *testing.T) {
	measured := mcload.IdleResult{Sessions: 10, LoggedIn: 10, Alive: 10, ProxyMeasured: true, RSSPerSession: 4, HeapMeasured: true}
	for _, tc := range []struct {
		name     string
		res      mcload.IdleResult
		minAlive int
		maxRSS   float64
		launched bool
		heap     bool
		want     []string // in the failures, one each; none for a pass
	}{
		{name: "all measured", res: measured, minAlive: 10, maxRSS: 8, launched: true, heap: true},
		{name: "--addr without process figures", minAlive: 10,
			res: mcload.IdleResult{Alive: 10, LoggedIn: 10, MeasurementGap: "no proxy process to measure (--addr given)"}},
		{name: "too few alive", res: measured, minAlive: 11, want: []string{"10 sessions alive, want at least 11"}},
		{name: "too much RSS", res: measured, minAlive: 10, maxRSS: 3, want: []string{"RSS per session 4.00 KiB exceeds 3.00 KiB"}},
		{name: "RSS gate without figures", minAlive: 10, maxRSS: 3,
			res:  mcload.IdleResult{Alive: 10, MeasurementGap: "no proxy process to measure (--addr given)"},
			want: []string{"--max-rss-per-session set but the proxy's memory was not measured"}},
		{name: "process unreadable before the logins", minAlive: 10, launched: true,
			res:  mcload.IdleResult{Alive: 10, LoggedIn: 10, MeasurementGap: "schedstat of pid 7: gone"},
			want: []string{"the proxy's process figures: schedstat of pid 7: gone"}},
		{name: "process unreadable at the end of the hold", minAlive: 10, launched: true,
			res: func() mcload.IdleResult {
				r := measured
				r.MeasurementGap = "the proxy at the end of the hold: schedstat of pid 7: gone"
				return r
			}(),
			want: []string{"the proxy's process figures: the proxy at the end of the hold: schedstat of pid 7: gone"}},
		{name: "heap asked for, not read", minAlive: 10, heap: true,
			res: func() mcload.IdleResult {
				r := measured
				r.HeapMeasured, r.HeapMeasurementGap = false, "gometrics: GET http://x/metrics: refused"
				return r
			}(),
			want: []string{"--heap set but the proxy's Go heap was not measured: gometrics: GET http://x/metrics: refused"}},
		{name: "heap asked for, no session", minAlive: 0, heap: true,
			res:  mcload.IdleResult{Sessions: 10},
			want: []string{"--heap set but the proxy's Go heap was not measured: no session logged in"}},
	} {
		got := idleFailures(&tc.res, tc.minAlive, tc.maxRSS, tc.launched, tc.heap)
		if len(got) != len(tc.want) {
			t.Errorf("%s: failures %q, want %q", tc.name, got, tc.want)
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: failure %q, want it to say %q", tc.name, got[i], w)
			}
		}
	}
}
