package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestName(t *testing.T) {
	for _, tc := range []struct{ date, kind, label, want string }{
		{"2026-12-01T13:52:13Z", "upgrade", "", "2026-12-01-upgrade"},
		{"2026-12-01T13:52:13Z", "storm", "after", "2026-12-01-storm-after"},
		{"2026-12-01", "drain-cost", "", "2026-12-01-drain-cost"},
	} {
		if got := Name(tc.date, tc.kind, tc.label); got != tc.want {
			t.Errorf("Name(%q, %q, %q) = %q, want %q", tc.date, tc.kind, tc.label, got, tc.want)
		}
	}
}

// TestWriteLeavesBothFiles: Write makes the directory, and the JSON reads
// back as what was written, with the header lines in the Markdown.
func TestWriteLeavesBothFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	m := NewMeta("tidegate-bench bench x", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), "abc1234")
	var b strings.Builder
	m.WriteHeader(&b, " (tool)", "; RLIMIT_NOFILE 20000")
	md, err := Write(dir, Name(m.Date, "x", "label"), b.String(), m)
	if err != nil {
		t.Fatal(err)
	}
	if md != filepath.Join(dir, "2026-12-01-x-label.md") {
		t.Fatalf("markdown at %s", md)
	}
	text, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- date: 2026-12-01T10:00:00Z\n", "- command: `tidegate-bench bench x`\n", "- revision: abc1234 (tool)\n", "; RLIMIT_NOFILE 20000\n"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("markdown lacks %q:\n%s", want, text)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "2026-12-01-x-label.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Meta
	if err := json.Unmarshal(raw, &back); err != nil || back.Revision != "abc1234" || back.Host.NumCPU == 0 {
		t.Fatalf("JSON read back as %+v (%v)", back, err)
	}
}

func TestWriteVerdict(t *testing.T) {
	for _, tc := range []struct {
		ok   bool
		want string
	}{
		{true, "PASS: all good.\n\n"},
		{false, "FAIL (the tool exited non-zero): see Failures.\n\n"},
	} {
		var b strings.Builder
		WriteVerdict(&b, tc.ok, "PASS: all good.")
		if b.String() != tc.want {
			t.Errorf("ok %v: %q, want %q", tc.ok, b.String(), tc.want)
		}
	}
}

func TestWriteTables(t *testing.T) {
	boom := errors.New("boom")
	table := func(name string, fail error) func(io.Writer, int) error {
		return func(w io.Writer, r int) error {
			fmt.Fprintf(w, "%s of %d\n", name, r)
			return fail
		}
	}
	for _, tc := range []struct {
		summary, trials error
		want            string
		wantErr         error
	}{
		{nil, nil, "## Summary\n\nsummary of 7\n\n## Trials\n\ntrials of 7\n", nil},
		{boom, nil, "## Summary\n\nsummary of 7\n", boom},
		{nil, boom, "## Summary\n\nsummary of 7\n\n## Trials\n\ntrials of 7\n", boom},
	} {
		var b strings.Builder
		err := WriteTables(&b, 7, table("summary", tc.summary), table("trials", tc.trials))
		if b.String() != tc.want || err != tc.wantErr {
			t.Errorf("tables failing with %v, %v: %q, %v; want %q, %v", tc.summary, tc.trials, b.String(), err, tc.want, tc.wantErr)
		}
	}
}

func TestWriteFailures(t *testing.T) {
	for _, tc := range []struct {
		failures []string
		want     string
	}{
		{nil, ""},
		{[]string{}, ""},
		{[]string{"a repeat 0: lost"}, "\n## Failures\n\n- a repeat 0: lost\n"},
		{[]string{"a", "b"}, "\n## Failures\n\n- a\n- b\n"},
	} {
		var b strings.Builder
		WriteFailures(&b, tc.failures)
		if b.String() != tc.want {
			t.Errorf("%q: %q, want %q", tc.failures, b.String(), tc.want)
		}
	}
}
