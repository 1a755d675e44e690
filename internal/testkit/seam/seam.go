// Package seam sets a package's test seams (hook variables) for one test.
package seam

import "testing"

// Set makes *hook f for the length of t, then puts back what it was.
func Set[F any](t testing.TB, hook *F, f F) {
	t.Helper()
	prev := *hook
	*hook = f
	t.Cleanup(func() { *hook = prev })
}
