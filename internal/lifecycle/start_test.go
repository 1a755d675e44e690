package lifecycle

import (
	"os"
	"runtime"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/logbuf"
)

// TestStartLineNamesTheProcess: the start line carries the version, the
// revision, Go's version, the pid, the command and the descriptor limit.
func TestStartLineNamesTheProcess(t *testing.T) {
	logs := &logbuf.Buffer{}
	StartEvent(zerolog.New(logs), "v1.2.3", "tidegate serve").Int("loops", 1).Msg(StartMessage)
	l := logged(logs, StartMessage)
	if l == nil {
		t.Fatalf("no start line in %s", logs)
	}
	for key, want := range map[string]any{"version": "v1.2.3", "command": "tidegate serve", "go": runtime.Version(),
		"pid": float64(os.Getpid()), "loops": float64(1)} {
		if l[key] != want {
			t.Errorf("start line %s = %v, want %v", key, l[key], want)
		}
	}
	if l["revision"] == "" || (l["fd_limit"] == nil && l["fd_limit_error"] == nil) {
		t.Errorf("start line %v: want a revision and the descriptor limit", l)
	}
}

// TestSparePLeavesOneP: GOMAXPROCS is raised to one more than the loops,
// never lowered, and left alone when the environment sets it.
func TestSparePLeavesOneP(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	t.Setenv("GOMAXPROCS", "")
	if got := SpareP(before + 2); got != before+3 || runtime.GOMAXPROCS(0) != before+3 {
		t.Fatalf("SpareP(%d) = %d, want %d", before+2, got, before+3)
	}
	if got := SpareP(0); got != before+3 {
		t.Fatalf("SpareP(0) = %d: lowered from %d", got, before+3)
	}
	runtime.GOMAXPROCS(before)
	t.Setenv("GOMAXPROCS", "1")
	if got := SpareP(before + 2); got != before {
		t.Fatalf("SpareP with GOMAXPROCS set = %d, want %d unchanged", got, before)
	}
}
