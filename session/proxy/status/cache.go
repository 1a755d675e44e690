package status

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Entry is one refresh's result.
type Entry struct {
	Reply   *Reply // nil when the refresh failed
	Expires int64  // on the clock the caller gives Lookup
}

// Cache is a group's cached status, shared by all loops; W is what waits
// for a refresh (the proxy's sessions).
type Cache[W any] struct {
	cur      atomic.Pointer[Entry] // read without the lock on the hot path
	mu       sync.Mutex
	inflight bool
	waiters  []W
}

// Lookup returns the cached entry when it is still fresh at now. Otherwise
// it queues w for the refresh in flight, and reports start when there is
// none: the caller must start it.
func (c *Cache[W]) Lookup(w W, now int64) (e Entry, fresh, start bool) {
	if e := c.cur.Load(); e != nil && e.Expires > now {
		return *e, true, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.cur.Load(); e != nil && e.Expires > now {
		return *e, true, false
	}
	c.waiters = append(c.waiters, w)
	if c.inflight {
		return Entry{}, false, false
	}
	c.inflight = true
	return Entry{}, false, true
}

// Complete stores a refresh's result and returns what waited for it.
func (c *Cache[W]) Complete(e Entry) []W {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur.Store(&e)
	c.inflight = false
	w := c.waiters
	c.waiters = nil
	return w
}

// Refresher runs the refreshes, one goroutine per refresh in flight (at
// most one per group), lets Stop wait for them, and counts them.
type Refresher struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed bool

	ok, failed atomic.Int64
}

// Spawn runs f on a new goroutine; it reports false once Stop has been called.
func (r *Refresher) Spawn(f func(ctx context.Context)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	if r.ctx == nil {
		r.ctx, r.cancel = context.WithCancel(context.Background())
	}
	ctx := r.ctx
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f(ctx)
	}()
	return true
}

// Stop ends the refreshes for good: those in flight are cancelled, and it
// waits for them until ctx ends.
func (r *Refresher) Stop(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("proxy: status refreshes did not stop: %w", ctx.Err())
	}
}

// Counted adds a refresh to the count of those that fetched a status (ok)
// or failed.
func (r *Refresher) Counted(ok bool) {
	if ok {
		r.ok.Add(1)
	} else {
		r.failed.Add(1)
	}
}

// Counts returns how many refreshes fetched a status and how many failed.
func (r *Refresher) Counts() (ok, failed int64) { return r.ok.Load(), r.failed.Load() }
