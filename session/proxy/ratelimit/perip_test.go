package ratelimit

import (
	"fmt"
	"testing"
)

// TestSessionsPerIP: Enter admits up to the limit per IP, Add counts past
// it, Leave forgets an IP whose last session left.
func TestSessionsPerIP(t *testing.T) {
	var c SessionsPerIP
	for i, want := range []bool{true, true, false} {
		if got := c.Enter("a", 2); got != want {
			t.Fatalf("Enter of a's session %d with a limit of 2: %v, want %v", i+1, got, want)
		}
	}
	if !c.Enter("b", 2) {
		t.Fatal("a's sessions count against b")
	}
	c.Add("a")
	if got := fmt.Sprint(c.Counts()); got != "map[a:3 b:1]" {
		t.Fatalf("counts %s after Add, want map[a:3 b:1]", got)
	}
	c.Leave("b")
	c.Leave("a")
	if got := fmt.Sprint(c.Counts()); got != "map[a:2]" {
		t.Fatalf("counts %s after Leave, want map[a:2]", got)
	}
}
