package waitfor

import (
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTB records what the helper asks of a test. Its Fatalf ends the calling
// goroutine, as testing.T's does, so that the tests see whether the helper
// went on after failing.
type fakeTB struct {
	testing.TB // nil: the helper calls only the methods below
	helpers    int
	failed     bool
	msg        string
}

func (f *fakeTB) Helper() { f.helpers++ }

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls wait with a fakeTB on a goroutine of its own (the fake's Fatalf
// ends it) and returns the fake once wait has returned or failed.
func run(wait func(testing.TB)) *fakeTB {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(f)
	}()
	<-done
	return f
}

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	f := run(func(tb testing.TB) {
		For(tb, "the third poll", func() bool { return calls.Add(1) == 3 })
	})
	if f.failed {
		t.Fatalf("failed: %s", f.msg)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("polled %d times, want 3 (no poll after the condition held)", n)
	}
	if f.helpers == 0 {
		t.Fatal("For did not call t.Helper: a failure would name the helper's line, not the test's")
	}
}

func TestForChecksAtOnce(t *testing.T) {
	start := time.Now()
	f := run(func(tb testing.TB) { For(tb, "true", func() bool { return true }) })
	if f.failed {
		t.Fatalf("failed: %s", f.msg)
	}
	// No sleep before the first poll: far under any interval even on a
	// loaded machine would be too tight to assert; a second is not.
	if el := time.Since(start); el > time.Second {
		t.Fatalf("a condition that held at once took %v", el)
	}
}

func TestWithinFailsWhenTheConditionNeverHolds(t *testing.T) {
	const timeout = 200 * time.Millisecond
	var calls atomic.Int32
	var after atomic.Bool
	start := time.Now()
	f := run(func(tb testing.TB) {
		Within(tb, timeout, "the backend to answer", func() error {
			calls.Add(1)
			return errors.New("connection refused")
		})
		after.Store(true)
	})
	el := time.Since(start)
	if !f.failed {
		t.Fatal("a condition that never held did not fail the test")
	}
	if after.Load() {
		t.Fatal("the test went on after the failure (Fatalf, not Errorf)")
	}
	if el < timeout {
		t.Fatalf("failed after %v, before its %v deadline", el, timeout)
	}
	// The message says what was awaited, for how long, how often it was
	// polled and the last reason it did not hold.
	m := regexp.MustCompile(`^waited (\S+) for the backend to answer \((\d+) polls\): connection refused$`).FindStringSubmatch(f.msg)
	if m == nil {
		t.Fatalf("message %q", f.msg)
	}
	waited, err := time.ParseDuration(m[1])
	if err != nil || waited < timeout {
		t.Fatalf("message %q: says it waited %v (%v), want at least %v", f.msg, waited, err, timeout)
	}
	if m[2] != fmt.Sprint(calls.Load()) || calls.Load() < 3 {
		t.Fatalf("message %q: %d polls in fact, want it to say so (and more than 2 in %v)", f.msg, calls.Load(), timeout)
	}
	if f.helpers == 0 {
		t.Fatal("Within did not call t.Helper")
	}
}

func TestCheckReportsTheLastError(t *testing.T) {
	// Check waits Timeout; its failure path is Within's (tested above), so
	// here: it returns once the check passes, and the errors before do not
	// fail it.
	var calls atomic.Int32
	f := run(func(tb testing.TB) {
		Check(tb, "the second poll", func() error {
			if calls.Add(1) < 2 {
				return errors.New("not yet")
			}
			return nil
		})
	})
	if f.failed || calls.Load() != 2 {
		t.Fatalf("failed %v (%q) after %d polls", f.failed, f.msg, calls.Load())
	}
}

func TestWithinPollsUntilTheDeadline(t *testing.T) {
	// A condition that comes true after several intervals is still seen:
	// the interval grows, but not past maxInterval.
	start := time.Now()
	f := run(func(tb testing.TB) {
		Within(tb, 5*time.Second, "300ms to pass", func() error {
			if el := time.Since(start); el < 300*time.Millisecond {
				return fmt.Errorf("only %v", el)
			}
			return nil
		})
	})
	if f.failed {
		t.Fatalf("failed: %s", f.msg)
	}
}

func TestForFailsWithoutAReason(t *testing.T) {
	// For is poll with Timeout and a condition that gives no reason; poll
	// is called here with a short deadline so as not to wait Timeout out.
	f := run(func(tb testing.TB) {
		poll(tb, 50*time.Millisecond, "the queue to drain", func() (bool, string) { return false, "" })
	})
	if !f.failed || !regexp.MustCompile(`^waited \S+ for the queue to drain \(\d+ polls\)$`).MatchString(f.msg) {
		t.Fatalf("failed %v, message %q", f.failed, f.msg)
	}
}

func TestValueShowsTheLastValue(t *testing.T) {
	var n atomic.Int32
	f := run(func(tb testing.TB) {
		Value(tb, "n to reach 3", func() int32 { return n.Add(1) }, func(v int32) bool { return v == 3 })
	})
	if f.failed || n.Load() != 3 {
		t.Fatalf("failed %v after %d reads, want success at the third", f.failed, n.Load())
	}
	type stats struct{ A int }
	f = run(func(tb testing.TB) {
		valueWithin(tb, 30*time.Millisecond, "A to reach 2", func() stats { return stats{A: 1} }, func(s stats) bool { return s.A == 2 })
	})
	if !f.failed || !regexp.MustCompile(`last seen \{A:1\}`).MatchString(f.msg) {
		t.Fatalf("failed %v, message %q", f.failed, f.msg)
	}
}
