package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// runUntilListening runs argv in-process until its metrics endpoint
// listens, then stops it, and returns its logs; it fails t if the command
// fails or does not get there within waitfor.Timeout.
func runUntilListening(t *testing.T, argv ...string) *syncBuffer {
	t.Helper()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- testApp(logs).RunContext(ctx, append([]string{"tidegate"}, argv...)) }()
	// A failure below leaves the command running: the cleanup stops it,
	// and waits for it unless done was read.
	ended := false
	t.Cleanup(func() {
		cancel()
		if !ended {
			<-done
		}
	})
	waitfor.Check(t, fmt.Sprintf("%v's metrics listener", argv), func() error {
		select {
		case err := <-done:
			ended = true
			t.Fatalf("%v ended before its metrics listened: %v\n%s", argv, err, logs)
		default:
		}
		if !strings.Contains(logs.String(), "metrics listening") {
			return fmt.Errorf("not in its log yet:\n%s", logs)
		}
		return nil
	})
	cancel()
	err := <-done
	ended = true
	if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	return logs
}

// TestLogFlagsBeforeOrAfterTheCommand: --log-level and --log-format work on
// either side of the command's name; given on both, the one after it wins.
func TestLogFlagsBeforeOrAfterTheCommand(t *testing.T) {
	serve := []string{"serve", "--listen", "127.0.0.1:0", "--loops", "1", "--metrics-listen", "127.0.0.1:0"}
	for _, tc := range []struct {
		name  string
		argv  []string
		json  bool
		debug bool // gnet's debug lines are there
	}{
		{"before", append([]string{"--log-level", "debug", "--log-format", "json"}, serve...), true, true},
		{"after", append(append([]string{}, serve...), "--log-level", "debug", "--log-format", "json"), true, true},
		{"after wins", append(append([]string{"--log-level", "debug", "--log-format", "console"}, serve...), "--log-level", "info", "--log-format", "json"), true, false},
		{"format before, level after", append([]string{"--log-format", "json"}, append(serve, "--log-level", "info")...), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := runUntilListening(t, tc.argv...).String()
			if json := strings.HasPrefix(logs, "{"); json != tc.json {
				t.Errorf("JSON %v, want %v:\n%s", json, tc.json, logs)
			}
			if debug := strings.Contains(logs, `"level":"debug"`); debug != tc.debug {
				t.Errorf("debug lines %v, want %v:\n%s", debug, tc.debug, logs)
			}
		})
	}
	for _, argv := range [][]string{
		{"--log-level", "loud", "serve", "--listen", "127.0.0.1:0"},
		{"--log-format", "xml", "serve", "--listen", "127.0.0.1:0"},
	} {
		// A flag that went unread would start the server: the context ends it.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := testApp(&syncBuffer{}).RunContext(ctx, append([]string{"tidegate"}, argv...))
		cancel()
		if code := exitCode(err); code != exitConfig || !strings.Contains(err.Error(), argv[1]) {
			t.Errorf("%v: exit code %d (%v), want %d naming %q", argv, code, err, exitConfig, argv[1])
		}
	}
}

// TestHelpShowsEachDefaultOnce: no flag's help line says its default twice
// (a "(default: ...)" written in its usage and the one urfave/cli adds).
// tidegate-bench's commands are that binary's own.
func TestHelpShowsEachDefaultOnce(t *testing.T) {
	app := testApp(&syncBuffer{})
	var names [][]string
	for _, c := range app.Commands {
		names = append(names, []string{c.Name, "--help"})
	}
	names = append(names, []string{"--help"})
	for _, argv := range names {
		var out bytes.Buffer
		app := testApp(&syncBuffer{})
		app.Writer = &out
		if err := app.Run(append([]string{"tidegate"}, argv...)); err != nil {
			t.Fatalf("%v: %v", argv, err)
		}
		if out.Len() == 0 {
			t.Fatalf("%v printed nothing", argv)
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.Count(line, "(default:") > 1 {
				t.Errorf("%v: %q", argv, strings.TrimSpace(line))
			}
		}
	}
}
