package admin

import (
	"testing"
)

// TestHostMatches: the host filter, exact or *.suffix, on normalized hosts.
func TestHostMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"play.example.com", "play.example.com", true},
		{"play.example.com", "play.example.org", false},
		{"*.example.com", "play.example.com", true},
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "badexample.com", false},
		{"*.example.com", ".example.com", false},
		{"*.com", "example.com", true},
		{"", "", true},
	} {
		if got := hostMatches(tc.pattern, tc.host); got != tc.want {
			t.Errorf("hostMatches(%q, %q) = %v, want %v", tc.pattern, tc.host, got, tc.want)
		}
	}
}
