package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/session/pushserver"
)

// TestBenchPushExitsNonZeroWhenInterrupted: a clean run prints its line and
// exits 0; a run interrupted during its measurement prints no result and
// exits non-zero.
func TestBenchPushExitsNonZeroWhenInterrupted(t *testing.T) {
	_, pa, sa := testserver.Push(t, func(c *pushserver.Config) { c.Loops, c.Window = 1, 5*time.Millisecond })
	args := []string{"bench", "push", "--publish", pa, "--subscribe", sa, "--subscribers", "3", "--rate", "1000",
		"--payload", "16", "--warmup", "50ms", "--drain", "1s", "--log-level", "warn"}
	out, err := runApp(t, append(args, "--duration", "200ms")...)
	if err != nil || !strings.Contains(out, "run=1 ") || !strings.Contains(out, " lost=0 out_of_order=0 ") {
		t.Fatalf("clean run: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	out, err = runAppContext(t, ctx, append(args, "--duration", "1m")...)
	if exitCode(err) != 1 || strings.Contains(out, "run=1 ") {
		t.Fatalf("interrupted run: exit %d, %v\n%s", exitCode(err), err, out)
	}
}
