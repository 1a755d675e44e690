package leaktest

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// OpenFDs counts the process's open descriptors; -1 where /proc is missing.
func OpenFDs() int {
	if runtime.GOOS != "linux" {
		return -1
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// MainFDs is Main that also fails the run when, 3 s after the tests, more
// descriptors are open than before them (on Linux). Use it as TestMain's
// body: os.Exit(leaktest.MainFDs(m)).
func MainFDs(m *testing.M) int {
	// The runtime's poller descriptors (epoll and its eventfd) are opened
	// by the first pollable file and kept for good: open them before
	// counting, or a package whose first descriptor is opened by a test
	// counts them as leaked.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	before := OpenFDs()
	code := Main(m)
	if code != 0 || before < 0 {
		return code
	}
	deadline := time.Now().Add(3 * time.Second)
	for OpenFDs() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := OpenFDs(); n > before {
		fmt.Fprintf(os.Stderr, "%d descriptors open after the tests, %d before\n", n, before)
		return 1
	}
	return 0
}
