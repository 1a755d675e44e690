//go:build linux

package procs

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestWithMarkerFindsAChild: a child given a marker is found by it while it
// runs and is neither found nor alive once it has exited and been reaped.
func TestWithMarkerFindsAChild(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// One process with the marker in its command line: a shell would fork a
	// child that has the marker too until it execs, and outlives the kill.
	cmd := exec.Command("tail", "-f", marker)
	if err := cmd.Start(); err != nil {
		t.Skipf("starting sh: %v", err)
	}
	pid := cmd.Process.Pid
	if got := WithMarker(marker); !slices.Equal(got, []int{pid}) || !Alive(pid) {
		t.Fatalf("WithMarker = %v, Alive = %v; want [%d], true", got, Alive(pid), pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got := WithMarker(marker); len(got) != 0 || Alive(pid) {
		t.Fatalf("after exit: WithMarker = %v, Alive = %v", got, Alive(pid))
	}
}
