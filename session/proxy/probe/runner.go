package probe

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Runner is a set of probers, one goroutine per target, each probing its
// target at once and then every interval until Stop.
type Runner struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start starts a prober for each of targets that calls probe(ctx, target)
// every interval; ctx ends at Stop.
func Start[T any](interval time.Duration, targets []T, probe func(context.Context, T)) *Runner {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{cancel: cancel}
	for _, t := range targets {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			probeLoop(ctx, interval, func(ctx context.Context) { probe(ctx, t) })
		}()
	}
	return r
}

// probeLoop calls probe at once and then every interval until ctx ends.
func probeLoop(ctx context.Context, interval time.Duration, probe func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Stop ends the probers' context and waits for them to return until ctx
// ends.
func (r *Runner) Stop(ctx context.Context) error {
	r.cancel()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("proxy: health checkers did not stop: %w", ctx.Err())
	}
}
