// Package leaktest finds goroutines that tests leave running. It knows the
// worker pools that outlive any one connection by design: gnet's (ants,
// whose idle workers expire after 10 s) and the reactor's dial pool (idle
// workers exit after 5 s); and os/signal's loop, which the first
// signal.Notify starts for the life of the process (a command under test,
// or go test -fuzz's coordinator, calls it). Those are not leaks; every
// other goroutine is.
package leaktest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// poolFrames mark the stacks of pool workers and process-long goroutines
// that are not leaks.
var poolFrames = []string{"panjf2000/ants", "reactor.(*dialPool).work", "os/signal.loop"}

// Goroutines counts the goroutines running now, less idle pool workers.
func Goroutines() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.TrimSpace(g) == "" || isPoolWorker(g) {
			continue
		}
		n++
	}
	return n
}

func isPoolWorker(stack string) bool {
	for _, f := range poolFrames {
		if strings.Contains(stack, f) {
			return true
		}
	}
	return false
}

// Main runs the tests and fails the run when, 3 s after them, more
// goroutines run than before them (servers not stopped, clients not closed).
// Use it as TestMain's body: os.Exit(leaktest.Main(m)).
func Main(m *testing.M) int {
	before := Goroutines()
	code := m.Run()
	if code != 0 {
		return code
	}
	deadline := time.Now().Add(3 * time.Second)
	for Goroutines() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := Goroutines(); n > before {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		fmt.Fprintf(os.Stderr, "%d goroutines left running after the tests (%d before):\n%s\n", n, before,
			strings.TrimSpace(stacks))
		return 1
	}
	return 0
}
