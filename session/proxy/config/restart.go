package config

import (
	"fmt"
	"reflect"
)

// RestartChanges lists what differs between a and b that a reload cannot
// change: a reload from a to b is refused while the list is not empty.
func (a *Config) RestartChanges(b *Config) []string {
	var out []string
	for i, y := range b.Listeners {
		for _, x := range a.Listeners {
			if x.Listen == y.Listen && x.Mode != y.Mode {
				out = append(out, fmt.Sprintf("listeners[%d]: %s changes mode from %s to %s (a listener's mode needs a restart; a new address can be added)", i, y.Listen, x.Mode, y.Mode))
			}
		}
	}
	if a.Loops != b.Loops {
		out = append(out, fmt.Sprintf("loops changed from %d to %d (needs a restart)", a.Loops, b.Loops))
	}
	if a.ReusePort != b.ReusePort {
		out = append(out, "reuse_port changed (needs a restart)")
	}
	if !reflect.DeepEqual(a.Cluster, b.Cluster) {
		out = append(out, "cluster changed (the Redis connection, the proxy's ID and what it publishes need a restart)")
	}
	if !a.OnlineGroups() && b.OnlineGroups() {
		out = append(out, "a group has login: online now (the key pair and the session server pool are made at start: needs a restart)")
	}
	if a.Auth != b.Auth {
		out = append(out, "online_mode changed (the key pair and the session server pool are the process's: needs a restart)")
	}
	la, lb := a.Limits, b.Limits
	for _, f := range []struct {
		name string
		a, b any
	}{
		{"limits.max_sessions", la.MaxSessions, lb.MaxSessions},
		{"limits.high_watermark", la.HighWatermark, lb.HighWatermark},
		{"limits.low_watermark", la.LowWatermark, lb.LowWatermark},
		{"limits.buffer_budget", la.BufferBudget, lb.BufferBudget},
		{"limits.linger", la.Linger, lb.Linger},
	} {
		if f.a != f.b {
			out = append(out, fmt.Sprintf("%s changed from %v to %v (needs a restart)", f.name, f.a, f.b))
		}
	}
	return out
}

// KeptListeners returns, for each of next, the reactor index of the
// listener of prev (whose reactor indices are live) a reload keeps for it,
// an accepting one with the same address and mode, each kept once; -1
// for a listener to open.
func KeptListeners(prev []ListenerConfig, live []int, next []ListenerConfig) []int {
	kept := map[int]bool{}
	out := make([]int, len(next))
	for i, y := range next {
		out[i] = -1
		for j, x := range prev {
			if oi := live[j]; !kept[oi] && x.Listen == y.Listen && x.Mode == y.Mode {
				out[i], kept[oi] = oi, true
				break
			}
		}
	}
	return out
}
