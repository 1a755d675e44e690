package pushserver

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// writesConsistent returns an error when st shows a processed event without
// its outcome, or the other way round.
func writesConsistent(st Stats) error {
	if st.ProcessedWrites != st.SuccessfulWrites+st.Dropped+st.FailedWrites || st.BudgetDropped > st.Dropped {
		return fmt.Errorf("processed %d, successful %d + dropped %d (budget %d) + failed %d",
			st.ProcessedWrites, st.SuccessfulWrites, st.Dropped, st.BudgetDropped, st.FailedWrites)
	}
	return nil
}

// TestStatsMidFlushShowEveryProcessedEventWithItsOutcome reads Stats while a
// batch has been written and not yet counted, as a /metrics scrape may: the
// snapshot must not show its events processed without their outcome. (The
// server counted them processed before the write and successful after it, so
// TestDropsAreReportedToSSE, reading Stats while events were still flowing,
// saw "processed 131 != successful 129 + dropped 1 + failed 0".)
func TestStatsMidFlushShowEveryProcessedEventWithItsOutcome(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PublishAddr, cfg.SubscribeAddr = "tcp://127.0.0.1:0", "tcp://127.0.0.1:0"
	cfg.Loops, cfg.Window = 1, 0
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var seen atomic.Int64
	var inconsistent atomic.Pointer[string]
	srv.afterBatchWrite = func() {
		seen.Add(1)
		if err := writesConsistent(srv.Stats()); err != nil {
			msg := err.Error()
			inconsistent.CompareAndSwap(nil, &msg)
		}
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	pa, _ := srv.PublishAddr()
	sa, _ := srv.SubscribeAddr()
	c, lr := subscribeTCP(t, sa.String(), "mid")
	p := dial(t, pa.String())
	if _, err := p.Write(publishFrame(t, "mid", []byte("one"), []byte("two"))); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for n := 0; n < 2; {
		evs, err := lr.next()
		if err != nil {
			t.Fatal(err)
		}
		n += len(evs)
	}
	// The client can read the batch before the loop is back from writing
	// it: its count, which follows the seam, says the seam has run.
	waitStats(t, srv, "the batch counted", func(st Stats) bool { return st.SuccessfulWrites == 2 })
	if seen.Load() == 0 {
		t.Fatal("the events were counted and no batch write was seen")
	}
	if msg := inconsistent.Load(); msg != nil {
		t.Fatalf("Stats read after a batch was written: %s", *msg)
	}
}

// TestStatsReadDuringFlushesAreConsistent reads Stats from other goroutines
// while batches are written, and checks every snapshot: a flush's counts
// are published as one.
func TestStatsReadDuringFlushesAreConsistent(t *testing.T) {
	srv, pub, sub := startServer(t, func(c *Config) {
		c.Window = 0
		c.ReadIdle = 0 // the subscriber sends nothing after its request
	})
	const subscribers = 50
	for range subscribers {
		subscribeTCP(t, sub, "scrape")
	}
	p := dial(t, pub)
	stop := make(chan struct{})
	var readers sync.WaitGroup
	var reads atomic.Int64
	var inconsistent atomic.Pointer[string]
	stopReaders := sync.OnceFunc(func() { close(stop); readers.Wait() })
	defer stopReaders() // also when the test fails before the end
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				reads.Add(1)
				runtime.Gosched() // leave the loops their share of 2 cores
				if err := writesConsistent(srv.Stats()); err != nil {
					msg := err.Error()
					inconsistent.CompareAndSwap(nil, &msg)
				}
			}
		}()
	}
	// Every publisher read is one flush per subscriber: many flushes to
	// read during. The subscribers read nothing: what the kernel does not
	// take is dropped, which the invariant counts too.
	const events = 200
	for i := range events {
		if _, err := p.Write(publishFrame(t, "scrape", []byte("e"))); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	waitStats(t, srv, "every event processed", func(st Stats) bool { return st.ProcessedWrites == events*subscribers })
	stopReaders()
	if msg := inconsistent.Load(); msg != nil {
		t.Fatalf("a Stats read during flushes (of %d): %s", reads.Load(), *msg)
	}
}
