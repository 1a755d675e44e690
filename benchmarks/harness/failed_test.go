package harness

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestFailedTrialsNamesEachFailure(t *testing.T) {
	name := func(s string) string {
		if s == "ok" {
			return ""
		}
		return "trial " + s
	}
	if err := FailedTrials("tool", "runs", []string{"ok", "ok"}, name); err != nil {
		t.Fatalf("no failure: got %v, want nil", err)
	}
	err := FailedTrials("tool", "runs", []string{"ok", "a", "b"}, name)
	if want := "tool: 2 of 3 runs failed: trial a\ntrial b"; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}

func TestGnetLoggerRoutesLevels(t *testing.T) {
	var buf bytes.Buffer
	l := GnetLogger(zerolog.New(&buf).Level(zerolog.InfoLevel))
	l.Infof("start %d", 1) // debug: left out at info
	l.Warnf("warn %d", 2)
	l.Fatalf("fatal %d", 3) // logged, the process goes on
	got := buf.String()
	if strings.Contains(got, "start 1") || !strings.Contains(got, `"level":"warn","message":"warn 2"`) ||
		!strings.Contains(got, `"level":"error","message":"fatal 3"`) {
		t.Fatalf("log %q: want warn and fatal lines at warn and error, no info line", got)
	}
}
