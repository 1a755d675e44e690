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

// Probers holds the Runner of the running configuration: replaced as a
// whole on a reload (the old one stopped first, so that no target is
// probed twice at once), stopped for good at the end. Its zero value has
// none; it is safe for concurrent use.
type Probers struct {
	mu    sync.Mutex
	r     *Runner
	ended bool
}

// Start starts the Runner start returns (nil for none), unless Stop ended
// the probers for good.
func (p *Probers) Start(start func() *Runner) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ended {
		p.r = start()
	}
}

// Replace stops the running Runner, waiting for it at most wait, runs
// between, then starts the one start returns (as Start); the error says
// the old one did not stop in time.
func (p *Probers) Replace(wait time.Duration, between func(), start func() *Runner) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := p.stop(ctx)
	between()
	if !p.ended {
		p.r = start()
	}
	return err
}

// Stop stops the probers for good, waiting for them until ctx ends.
func (p *Probers) Stop(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	return p.stop(ctx)
}

func (p *Probers) stop(ctx context.Context) error {
	if p.r == nil {
		return nil
	}
	if err := p.r.Stop(ctx); err != nil {
		return err
	}
	p.r = nil
	return nil
}
