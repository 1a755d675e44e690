package logsetup

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestDurationsCarryTheirUnit(t *testing.T) {
	var b bytes.Buffer
	l, err := New(&b, zerolog.InfoLevel, FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	l.Info().Dur("login_timeout", 10*time.Second).Dur("window", 200*time.Millisecond).Dur("off", 0).Msg("x")
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatalf("%v in %s", err, b.Bytes())
	}
	for k, want := range map[string]string{"login_timeout": "10s", "window": "200ms", "off": "0s"} {
		if m[k] != want {
			t.Errorf("%s = %#v, want %q (in %s)", k, m[k], want, b.Bytes())
		}
	}
}

func TestParseLevelAndFormat(t *testing.T) {
	for _, ok := range []string{"debug", "info", "warn", "error"} {
		if _, err := ParseLevel(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "loud", "trace", "fatal", "disabled"} {
		if _, err := ParseLevel(bad); err == nil || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("level %q: %v, want an error naming it", bad, err)
		}
	}
	if _, err := New(&bytes.Buffer{}, zerolog.InfoLevel, "xml"); err == nil || !strings.Contains(err.Error(), `"xml"`) {
		t.Errorf("format xml: %v, want an error naming it", err)
	}
}

// TestConsoleColourOnlyOnATerminal: console lines written to a file or a
// buffer carry no ANSI codes; written to a terminal they do, unless
// NO_COLOR is set.
func TestConsoleColourOnlyOnATerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	logTo := func(w interface{ Write([]byte) (int, error) }) {
		t.Helper()
		l, err := New(w, zerolog.InfoLevel, FormatConsole)
		if err != nil {
			t.Fatal(err)
		}
		l.Warn().Str("k", "v").Msg("hello")
	}
	var b bytes.Buffer
	logTo(&b)
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	logTo(f)
	fromFile, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string][]byte{"buffer": b.Bytes(), "file": fromFile} {
		if !bytes.Contains(out, []byte("hello")) || bytes.Contains(out, []byte("\x1b[")) {
			t.Errorf("%s: want a plain line, got %q", name, out)
		}
	}

	master, slave, err := openPTY()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer master.Close()
	defer slave.Close()
	if !Colour(slave) {
		t.Fatal("a terminal is not taken for one")
	}
	logTo(slave)
	if got := readPTY(t, master); !bytes.Contains(got, []byte("\x1b[")) {
		t.Errorf("terminal: want ANSI colour codes, got %q", got)
	}
	t.Setenv("NO_COLOR", "1")
	if Colour(slave) {
		t.Error("NO_COLOR is set, yet colour is on")
	}
}

// readPTY reads what the terminal's master side has within 5 s.
func readPTY(t *testing.T, master *os.File) []byte {
	t.Helper()
	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 4096)
		n, _ := master.Read(buf)
		got <- buf[:n]
	}()
	select {
	case b := <-got:
		return b
	case <-time.After(5 * time.Second):
		t.Fatal("nothing arrived on the terminal within 5 s")
		return nil
	}
}
