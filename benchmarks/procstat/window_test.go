package procstat

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestWindowCountsBusyProcess checks that a window over this process, spinning
// through it, shows its CPU and wake-ups.
func TestWindowCountsBusyProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	pids := []int{os.Getpid()}
	w, err := StartWindow(pids)
	if err != nil {
		t.Fatal(err)
	}
	// Spin until this process has used 50 ms of CPU: on a loaded machine
	// that can take many times as long in wall time.
	self0, err := SelfCPU()
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		if s, _ := SelfCPU(); s-self0 > 50*time.Millisecond {
			break
		}
	}
	got, err := w.End(pids, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pct <= 0 || got.Runs <= 0 || got.Other < 0 {
		t.Fatalf("window over a spinning process: %+v, want some CPU, some runs, no negative rest", got)
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
