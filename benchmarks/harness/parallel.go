package harness

// Each runs the set-up steps of load generators, such as connecting and
// logging in thousands of sessions, a bounded number at a time: a burst of
// thousands of dials at once would overflow the listen backlogs of the
// proxy under test and of the backend it dials for each.

import (
	"context"
	"sync"
	"sync/atomic"
)

// Each calls f(0) to f(n-1), at most limit calls at a time (at least one),
// and returns once the calls it started have returned. After the first
// error, or once ctx ends, it starts no more calls, and it returns that
// error (or ctx's).
func Each(ctx context.Context, n, limit int, f func(i int) error) error {
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	for i := 0; i < n; i++ {
		if first.Load() != nil || ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(i); err != nil {
				first.CompareAndSwap(nil, &err)
			}
		}()
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		return *e
	}
	return ctx.Err()
}
