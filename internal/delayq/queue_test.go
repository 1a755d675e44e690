package delayq

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"
)

func TestQueueHoldsAndKeepsOrder(t *testing.T) {
	const hold = time.Millisecond
	q, err := New(hold)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []byte
	now := int64(0)
	pushedAt := map[byte]int64{}
	// Push a byte every 100 µs of fake time, and drain what is due in
	// uneven steps; every byte must come out at least hold after its push,
	// and all in the order pushed.
	for i := 0; i < 200; i++ {
		b := byte(i)
		q.Push(now, []byte{b})
		pushedAt[b] = now
		want = append(want, b)
		if i%7 == 3 {
			if due, ok := q.Next(); !ok || due != pushedAt[q.buf[q.off]]+int64(hold) {
				t.Fatalf("next due %d (ok %v), want the oldest byte's push plus the hold", due, ok)
			}
			out := q.Due(now)
			for _, c := range out {
				if now-pushedAt[c] < int64(hold) {
					t.Fatalf("byte %d out at %d, pushed at %d: held %v, want at least %v", c, now, pushedAt[c], time.Duration(now-pushedAt[c]), hold)
				}
			}
			got = append(got, out...)
			q.Take(len(out))
		}
		now += int64(100 * time.Microsecond)
	}
	if len(q.Due(now-1)) == q.Len() && q.Len() > 0 {
		// the last push was 100 µs ago: it cannot be due yet
		t.Fatalf("all %d held bytes due only 100 µs after the last push", q.Len())
	}
	now += int64(hold)
	out := q.Due(now)
	got = append(got, out...)
	q.Take(len(out))
	if !bytes.Equal(got, want) {
		t.Fatalf("bytes out of order or lost:\n got %v\nwant %v", got, want)
	}
	if q.Len() != 0 {
		t.Fatalf("%d bytes still held", q.Len())
	}
	if _, ok := q.Next(); ok {
		t.Fatal("empty queue has a next due time")
	}
}

func TestQueuePartialTake(t *testing.T) {
	q, _ := New(time.Millisecond)
	q.Push(0, []byte("abc"))
	q.Push(int64(time.Millisecond), []byte("def"))
	if d := q.Due(int64(time.Millisecond) - 1); len(d) != 0 {
		t.Fatalf("due %q before the hold", d)
	}
	if d := q.Due(int64(time.Millisecond)); string(d) != "abc" {
		t.Fatalf("due %q, want abc", d)
	}
	q.Take(2) // a short write
	if d := q.Due(int64(time.Millisecond)); string(d) != "c" {
		t.Fatalf("due %q after a short take, want c", d)
	}
	if due, _ := q.Next(); due != int64(time.Millisecond) {
		t.Fatalf("next due %d, want %d", due, time.Millisecond)
	}
	q.Take(1)
	if due, _ := q.Next(); due != int64(2*time.Millisecond) {
		t.Fatalf("next due %d, want %d", due, 2*time.Millisecond)
	}
	q.Push(int64(time.Millisecond), []byte("g")) // compacts
	if d := q.Due(int64(2 * time.Millisecond)); string(d) != "defg" {
		t.Fatalf("due %q, want defg", d)
	}
}

func TestNewRejectsNoHold(t *testing.T) {
	if _, err := New(0); err == nil {
		t.Fatal("New(0) made a queue")
	}
}

func TestSleeperWaitsAtLeast(t *testing.T) {
	s, err := NewSleeper()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, d := range []time.Duration{300 * time.Microsecond, time.Millisecond, 2 * time.Millisecond} {
		start := time.Now()
		if err := s.SleepUntil(start.Add(d)); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got < d {
			t.Fatalf("slept %v, want at least %v", got, d)
		}
	}
	if err := s.SleepUntil(time.Now().Add(-time.Second)); err != nil {
		t.Fatalf("a past deadline: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.SleepUntil(time.Now().Add(time.Hour)) }()
	time.Sleep(20 * time.Millisecond)
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("sleep after Close returned %v, want os.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not wake the sleeper")
	}
}
