package workerpool

import (
	"testing"
	"time"
)

// job is a Job that records nothing: the test looks at which one a worker takes.
type job struct{ id int }

func (job) Run(<-chan struct{}) {}

// TestNoLostWakeup is the race of a submit with a worker whose idle time
// runs out: the submit sees the worker still idle and starts none, so the
// retiring worker must take the job.
func TestNoLostWakeup(t *testing.T) {
	p := New[job]("test", 128, 16, time.Second)
	p.workers.Store(1) // one worker, counted idle, whose idle timer has fired
	p.idle.Store(1)
	if !p.Submit(job{id: 7}) {
		t.Fatal("submit refused")
	}
	if n := p.workers.Load(); n != 1 {
		t.Fatalf("submit started a worker (%d running) though one counted idle", n)
	}
	j, ok := p.retire()
	if !ok || j.id != 7 {
		t.Fatal("the retiring worker left the job in the queue: it would wait for the next submit")
	}
	if _, ok := p.retire(); ok {
		t.Fatal("retire took a job from an empty queue")
	}
}
