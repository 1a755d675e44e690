package main

import (
	"strings"
	"testing"
)

// TestBenchSessionRefusesWhatCannotRun: the players workload's flags and the
// echo workloads' are not mixed, --warmup is read as each kind wants it, and
// more sessions than the descriptor limit holds are refused, all before any
// process starts.
func TestBenchSessionRefusesWhatCannotRun(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "players", "--messages", "5"}, "--messages does not apply to --workload players"},
		{[]string{"--workload", "w1", "--rate", "5"}, "--rate does not apply to --workload w1"},
		{[]string{"--rate", "5"}, "--rate does not apply"},
		{[]string{"--workload", "players", "--warmup", "500"}, "want a duration"},
		{[]string{"--workload", "w16", "--warmup", "5s"}, "want a number of roundtrips"},
		{[]string{"--workload", "players", "--sessions", "1000000000"}, "sessions fit"},
		{[]string{"--workload", "players", "--chunk-min", "100"}, "chunk sizes"},
		{[]string{"--workload", "players", "--app-rtt", "2ms"}, "does not emulate"},
	} {
		_, err := runApp(t, append([]string{"bench", "session", "--tidegate-bin", "/nonexistent/tidegate"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
