// Package waitfor holds the one helper that tests use to wait for what
// happens elsewhere (an event loop, a peer, a child process): poll a
// condition until it holds, and fail the test, saying what it waited for and
// for how long, when it does not in time. The deadline is generous, for a
// loaded 2-core machine under the race detector: a condition that holds
// costs no more than the polls before it, and only a failing test waits it
// out.
package waitfor

import (
	"fmt"
	"testing"
	"time"
)

// Timeout is how long For and Check wait before they fail the test.
const Timeout = 20 * time.Second

// The first poll comes at once; the interval between polls then doubles from
// firstInterval up to maxInterval, so that a condition that holds soon is
// seen soon and one that takes seconds is not polled a thousand times.
const (
	firstInterval = time.Millisecond
	maxInterval   = 20 * time.Millisecond
)

// For polls cond until it returns true, and fails t (Fatalf) when it has not
// within Timeout: "waited 20s for <what>". Like every Fatalf, it must be
// called from the test's own goroutine.
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	poll(t, Timeout, what, func() (bool, string) { return cond(), "" })
}

// Check is For for a condition that says why it does not hold yet: it polls
// check until it returns nil, and the failure names the last error (the
// last state seen, the last refused dial).
func Check(t testing.TB, what string, check func() error) {
	t.Helper()
	Within(t, Timeout, what, check)
}

// Within is Check with its own deadline, for a wait known to take longer
// than Timeout (a child process built and started under the race detector).
func Within(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	poll(t, timeout, what, func() (bool, string) {
		if err := check(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// Value is Check on a value read again at each poll: it polls get until
// cond holds for what it returns, and a failure shows the last value seen
// (a server's stats).
func Value[V any](t testing.TB, what string, get func() V, cond func(V) bool) {
	t.Helper()
	valueWithin(t, Timeout, what, get, cond)
}

func valueWithin[V any](t testing.TB, timeout time.Duration, what string, get func() V, cond func(V) bool) {
	t.Helper()
	Within(t, timeout, what, func() error {
		if v := get(); !cond(v) {
			return fmt.Errorf("last seen %+v", v)
		}
		return nil
	})
}

func poll(t testing.TB, timeout time.Duration, what string, try func() (ok bool, why string)) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	interval := firstInterval
	for polls := 1; ; polls++ {
		ok, why := try()
		if ok {
			return
		}
		if !time.Now().Before(deadline) {
			if why != "" {
				why = ": " + why
			}
			t.Fatalf("waited %v for %s (%d polls)%s", time.Since(start).Round(time.Millisecond), what, polls, why)
			return
		}
		time.Sleep(min(interval, time.Until(deadline)))
		interval = min(2*interval, maxInterval)
	}
}
