package harness

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestEachBoundsAndStopsAtTheFirstError(t *testing.T) {
	var mu sync.Mutex
	running, most := 0, 0
	var calls atomic.Int32
	err := Each(context.Background(), 200, 8, func(int) error {
		calls.Add(1)
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	})
	if err != nil || calls.Load() != 200 || most > 8 {
		t.Fatalf("err %v, %d calls, %d at once; want nil, 200, at most 8", err, calls.Load(), most)
	}
	boom := errors.New("boom")
	calls.Store(0)
	err = Each(context.Background(), 1000, 4, func(i int) error {
		calls.Add(1)
		if i == 10 {
			return boom
		}
		time.Sleep(time.Millisecond)
		return nil
	})
	if !errors.Is(err, boom) || calls.Load() > 20 {
		t.Fatalf("err %v after %d calls; want boom soon after call 10", err, calls.Load())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Each(ctx, 10, 2, func(int) error { t.Error("called after ctx ended"); return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}
