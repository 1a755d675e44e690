// Package workerpool runs jobs on a bounded set of goroutines, started on
// demand and ended after a while without work, so that blocking work (a
// connect) neither takes a goroutine per job nor keeps idle ones around.
package workerpool

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Job is one piece of work. Run should return soon once stop is closed.
type Job interface {
	Run(stop <-chan struct{})
}

// Pool runs jobs on at most a fixed number of goroutines, started on
// demand; a worker exits after its idle time without work, or at Close.
type Pool[J Job] struct {
	name       string
	jobs       chan J
	stop       chan struct{}
	stopOnce   sync.Once
	maxWorkers int32
	workers    atomic.Int32 // running
	idle       atomic.Int32 // running and waiting for a job
	wg         sync.WaitGroup
	idleAfter  time.Duration
}

// New returns a pool of at most maxWorkers goroutines with room for queue
// jobs waiting; a worker exits after idleAfter without a job. name says
// what the workers do, for Close's error.
func New[J Job](name string, maxWorkers, queue int, idleAfter time.Duration) *Pool[J] {
	return &Pool[J]{name: name, jobs: make(chan J, queue), stop: make(chan struct{}),
		maxWorkers: int32(maxWorkers), idleAfter: idleAfter}
}

// Workers returns how many workers run now.
func (p *Pool[J]) Workers() int { return int(p.workers.Load()) }

// Submit queues j and makes sure a worker will take it; false when the
// queue is full.
func (p *Pool[J]) Submit(j J) bool {
	select {
	case p.jobs <- j:
	default:
		return false
	}
	p.ensureWorker()
	return true
}

// ensureWorker starts a worker unless one is waiting for a job or the pool
// is at its bound.
func (p *Pool[J]) ensureWorker() {
	for {
		n := p.workers.Load()
		if n >= p.maxWorkers || p.idle.Load() > 0 {
			return // a waiting worker takes it, or the pool is at its bound
		}
		if p.workers.CompareAndSwap(n, n+1) {
			p.wg.Add(1)
			go p.work()
			return
		}
	}
}

func (p *Pool[J]) work() {
	defer p.wg.Done()
	defer p.workers.Add(-1)
	idle := time.NewTimer(p.idleAfter)
	defer idle.Stop()
	for {
		p.idle.Add(1)
		select {
		case j := <-p.jobs:
			p.idle.Add(-1)
			j.Run(p.stop)
			idle.Reset(p.idleAfter)
		case <-idle.C:
			if j, ok := p.retire(); ok {
				j.Run(p.stop)
				idle.Reset(p.idleAfter)
				continue
			}
			return
		case <-p.stop:
			p.idle.Add(-1)
			return
		}
	}
}

// retire stops counting an idle worker whose idle time ran out. A job
// submitted while the worker still counted as idle started no other worker,
// so the worker takes it (ok) instead of leaving it to wait for the next
// submit.
func (p *Pool[J]) retire() (j J, ok bool) {
	p.idle.Add(-1)
	select {
	case j = <-p.jobs:
		return j, true
	default:
		return j, false
	}
}

// Close stops the workers and waits for them until ctx ends; queued jobs
// are dropped, and a job under way is told to stop.
func (p *Pool[J]) Close(ctx context.Context) error {
	p.stopOnce.Do(func() { close(p.stop) })
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s workers still running: %w", p.name, ctx.Err())
	}
}
