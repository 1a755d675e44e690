package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoBenchmarkCommands runs the production binary's own command table (in
// a child process, as main) and checks that the load generators and peers
// are gone from it: they live in cmd/tidegate-bench.
func TestNoBenchmarkCommands(t *testing.T) {
	for _, args := range [][]string{{"bench", "rps", "--help"}, {"peer", "goproxy", "--help"}} {
		b, _ := json.Marshal(args)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childArgsEnv+"="+string(b))
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "No help topic for '"+args[0]+"'") {
			t.Errorf("tidegate %s: err %v, output:\n%s\nwant an unknown command", strings.Join(args, " "), err, out)
		}
	}
	// The same child runs a command that is there, so the check above
	// cannot pass for a child that fails to start.
	b, _ := json.Marshal([]string{"version"})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgsEnv+"="+string(b))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "tidegate ") {
		t.Fatalf("tidegate version: %v\n%s", err, out)
	}
}
