package mcbackend

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run when goroutines started by the tests are still
// running after them (servers not stopped, clients not closed).
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			stacks := string(buf[:runtime.Stack(buf, true)])
			fmt.Fprintf(os.Stderr, "%d goroutines left running after the tests (%d before):\n%s\n", n, before,
				strings.TrimSpace(stacks))
			code = 1
		}
	}
	os.Exit(code)
}
