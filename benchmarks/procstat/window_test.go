package procstat

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestWindowCountsBusyProcess checks that a window over this process, spinning
// through it, shows its CPU and that lessSelf takes it out of the rest.
func TestWindowCountsBusyProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	pids := []int{os.Getpid()}
	w, err := StartWindow(pids)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
	}
	got, err := w.End(pids, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pct < 10 || got.Runs <= 0 || got.Other < 0 {
		t.Fatalf("window over a spinning process: %+v, want over 10%% of a core, some runs, no negative rest", got)
	}
}

func TestSampleWindowEndsWithContext(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SampleWindow(ctx, []int{os.Getpid()}, time.Hour); err == nil {
		t.Fatal("SampleWindow with a cancelled context returned no error")
	}
}
