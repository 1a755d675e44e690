package procstat

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func linuxOnly(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
}

func TestReadThisProcess(t *testing.T) {
	linuxOnly(t)
	s, err := Read([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUNs <= 0 || s.Slices <= 0 || s.RSSBytes <= 0 || s.Threads < 1 || s.FDs < 3 {
		t.Fatalf("sample %+v", s)
	}
	if rss, err := RSS(os.Getpid()); err != nil || rss <= 0 {
		t.Fatalf("RSS %d, %v", rss, err)
	}
	m, err := MachineCPU()
	if err != nil || m.Busy <= 0 || m.Idle < 0 || m.Processes <= 0 || m.Processes > m.Busy {
		t.Fatalf("machine CPU %+v: %v", m, err)
	}
	if _, err := TCPOutSegs(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	tree, err := ProcessTree(os.Getpid())
	if err != nil || tree[0] != os.Getpid() {
		t.Fatalf("tree %v %v", tree, err)
	}
}

// spin keeps one core busy until this process has used d more CPU (on a
// shared machine wall time says little), or 10 s have passed.
func spin(t *testing.T, d time.Duration) {
	t.Helper()
	start, err := SelfCPU()
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		for i := 0; i < 100000; i++ {
		}
		if now, _ := SelfCPU(); now-start >= d {
			return
		}
	}
	t.Fatalf("no %v of CPU within 10 s", d)
}

// TestCPUCountsNanoseconds checks that a process's CPU comes from the
// scheduler's nanosecond clock, not from 10 ms ticks (/proc/PID/stat): a
// tick reader would only ever return multiples of 10 ms.
func TestCPUCountsNanoseconds(t *testing.T) {
	linuxOnly(t)
	runtime.LockOSThread() // one thread stays, so no CPU leaves the sum
	defer runtime.UnlockOSThread()
	before, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	spin(t, 50*time.Millisecond)
	after, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// getrusage and schedstat read the same clock: both saw the spin.
	if d := after - before; d < 40*time.Millisecond || d > 10*time.Second {
		t.Fatalf("CPU grew %v over a spin of 50 ms of CPU", d)
	}
	if after%(10*time.Millisecond) == 0 && before%(10*time.Millisecond) == 0 {
		t.Fatalf("CPU %v and %v are whole ticks: not schedstat nanoseconds", before, after)
	}
}

func TestReadFailsForAMissingProcess(t *testing.T) {
	linuxOnly(t)
	const gone = 1 << 30 // above pid_max
	if _, err := Read([]int{gone}); err == nil {
		t.Fatal("Read of a process that does not exist succeeded")
	}
	if _, err := CPU(gone); err == nil {
		t.Fatal("CPU of a process that does not exist succeeded")
	}
}
