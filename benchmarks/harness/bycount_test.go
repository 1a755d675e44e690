package harness

import (
	"slices"
	"testing"
)

func TestByCountLeadsWithTheCommonestThenByName(t *testing.T) {
	got := ByCount(map[string]int{"reset": 2, "closed": 5, "a timeout": 2, "refused": 1})
	if want := []string{"closed", "a timeout", "reset", "refused"}; !slices.Equal(got, want) {
		t.Fatalf("ByCount = %q, want %q", got, want)
	}
}
