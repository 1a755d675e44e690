package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/mcclient"
)

// phaseRun is what runPhase measured.
type phaseRun struct {
	elapsed    time.Duration
	roundtrips int64
	hist       *hdrhistogram.Histogram
	errors     int64
	samples    []string
	// holdLate is the mean time held bursts went out after their due time
	// (with --app-rtt); zero without holds.
	holdLate time.Duration
}

// runPhase connects p.Connections clients to addr, logs each in, warms up,
// then times p.Messages roundtrips per connection. hold > 0 makes each
// client hold every burst that long before writing it. A connection that cannot
// log in or whose stream breaks ends the phase with an error; mismatched
// echoes are counted in phaseRun.errors.
func runPhase(ctx context.Context, addr string, p Params, hold, stall time.Duration, hooks harness.PhaseHooks) (phaseRun, error) {
	host, port, err := mcclient.SplitHostPort(addr)
	if err != nil {
		return phaseRun{}, err
	}
	k := newCodec(p.Payload)
	base := time.Now()
	clients := make([]*client, p.Connections)
	var wg sync.WaitGroup
	loginErrs := make([]error, p.Connections)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, left, err := mcclient.DialLogin(ctx, addr, host, port, fmt.Sprintf("conn %d", i), fmt.Sprintf("bench%d", i))
			if err != nil {
				loginErrs[i] = err
				return
			}
			c, err := newClient(uint32(i), nc, k, p, base, left, hold)
			if err != nil {
				nc.Close()
				loginErrs[i] = err
				return
			}
			clients[i] = c
		}()
	}
	wg.Wait()
	closeAll := func() {
		for _, c := range clients {
			if c != nil {
				c.close()
			}
		}
	}
	if err := errors.Join(loginErrs...); err != nil {
		closeAll()
		return phaseRun{}, err
	}
	defer closeAll()

	total := int64(p.Connections) * int64(p.Warmup+p.Messages)
	echoed := func() int64 {
		var n int64
		for _, c := range clients {
			n += c.echoes.Load()
		}
		return n
	}
	// The watchdog closes every connection when nothing moves for stall, or
	// when ctx ends; blocked reads then fail and the phase returns.
	var stalled atomic.Bool
	stop := make(chan struct{})
	watchdogDone := make(chan struct{})
	go func() {
		defer close(watchdogDone)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		last, lastMove := int64(-1), time.Now()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				closeAll()
				return
			case now := <-t.C:
				n := echoed()
				if hooks.Progress != nil {
					hooks.Progress(n, total)
				}
				if n != last {
					last, lastMove = n, now
				} else if now.Sub(lastMove) > stall {
					stalled.Store(true)
					closeAll()
					return
				}
			}
		}
	}()
	defer func() {
		close(stop)
		<-watchdogDone
	}()

	warm := make(chan error, p.Connections)
	release := make(chan struct{})
	finished := make(chan error, p.Connections)
	for _, c := range clients {
		go func() {
			if err := c.run(0, p.Warmup, false); err != nil {
				warm <- err
				finished <- nil
				return
			}
			warm <- nil
			<-release
			finished <- c.run(p.Warmup, p.Warmup+p.Messages, true)
		}()
	}
	var errs []error
	for range clients {
		if err := <-warm; err != nil {
			errs = append(errs, fmt.Errorf("warmup: %w", err))
		}
	}
	if len(errs) > 0 {
		closeAll()
		close(release)
		for range clients {
			<-finished
		}
		return phaseRun{}, phaseError(errors.Join(errs...), &stalled)
	}
	var hookErr error
	if hooks.Before != nil {
		hookErr = hooks.Before()
	}
	start := time.Now()
	close(release)
	for range clients {
		if err := <-finished; err != nil {
			errs = append(errs, err)
		}
	}
	elapsed := time.Since(start)
	if hooks.After != nil {
		hookErr = errors.Join(hookErr, hooks.After())
	}
	if len(errs) > 0 {
		return phaseRun{}, phaseError(errors.Join(errs...), &stalled)
	}
	if hookErr != nil {
		return phaseRun{}, hookErr
	}
	r := phaseRun{elapsed: elapsed, hist: harness.NewLatencyHistogram()}
	var lateNs, writes int64
	for _, c := range clients {
		if c.hold != nil {
			lateNs += c.hold.lateNs.Load()
			writes += c.hold.writes.Load()
		}
		r.roundtrips += c.measured
		r.hist.Merge(c.hist)
		r.errors += c.errors
		r.samples = append(r.samples, c.samples...)
	}
	if writes > 0 {
		r.holdLate = time.Duration(lateNs / writes)
	}
	if len(r.samples) > maxErrorSamples {
		r.samples = r.samples[:maxErrorSamples]
	}
	if hooks.Progress != nil {
		hooks.Progress(total, total)
	}
	return r, nil
}

func phaseError(err error, stalled *atomic.Bool) error {
	if stalled.Load() {
		return fmt.Errorf("%w: %w", harness.ErrStalled, err)
	}
	return err
}
