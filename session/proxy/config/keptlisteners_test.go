package config

import (
	"slices"
	"testing"
)

// TestKeptListeners: a reload keeps an accepting listener for each new one
// with the same address and mode, once each; the others are opened (-1).
func TestKeptListeners(t *testing.T) {
	prev := []ListenerConfig{{Listen: "a:1", Mode: ModeMinecraft}, {Listen: "b:1", Mode: ModeRaw}, {Listen: "a:1", Mode: ModeMinecraft}}
	live := []int{0, 3, 5}
	for _, tc := range []struct {
		name string
		next []ListenerConfig
		want []int
	}{
		{"same", prev, []int{0, 3, 5}},
		{"reordered", []ListenerConfig{prev[1], prev[0]}, []int{3, 0}},
		{"mode changed", []ListenerConfig{{Listen: "b:1", Mode: ModeMinecraft}}, []int{-1}},
		{"one more of an address", []ListenerConfig{prev[0], prev[0], prev[0]}, []int{0, 5, -1}},
		{"none", nil, []int{}},
	} {
		if got := KeptListeners(prev, live, tc.next); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
