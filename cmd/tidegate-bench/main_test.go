package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
)

// TestMain fails the run when the tests leave goroutines running.
func TestMain(m *testing.M) {
	if code := os.Getenv(fakeBackendEnv); code != "" {
		fakeBackend(code) // this binary re-run as a backend by a test
	}
	// os/signal starts its goroutine on first use, for good: the commands'
	// signal handling is not a leak.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	signal.Stop(sig)
	os.Exit(leaktest.Main(m))
}

// flagContext is a cli.Context whose --tidegate-bin is bin.
func flagContext(t *testing.T, bin string) *cli.Context {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	if err := tidegateBinFlag().Apply(fs); err != nil {
		t.Fatal(err)
	}
	if bin != "" {
		if err := fs.Set("tidegate-bin", bin); err != nil {
			t.Fatal(err)
		}
	}
	return cli.NewContext(cli.NewApp(), fs, nil)
}

func TestTidegateBinary(t *testing.T) {
	// The flag wins.
	if got, err := tidegateBinary(flagContext(t, "/opt/tg/tidegate")); err != nil || got != "/opt/tg/tidegate" {
		t.Fatalf("with --tidegate-bin: %q, %v", got, err)
	}
	// No tidegate next to the test binary: PATH is next.
	dir := t.TempDir()
	tg := filepath.Join(dir, "tidegate")
	if err := os.WriteFile(tg, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got, err := tidegateBinary(flagContext(t, "")); err != nil || got != tg {
		t.Fatalf("from PATH: %q, %v; want %s", got, err, tg)
	}
	// Nowhere: the error says what to do.
	t.Setenv("PATH", t.TempDir())
	_, err := tidegateBinary(flagContext(t, ""))
	if err == nil || !strings.Contains(err.Error(), "--tidegate-bin") {
		t.Fatalf("without a tidegate binary: %v, want an error naming --tidegate-bin", err)
	}
}

// TestCommandTable checks that the bench binary has the load generators and
// peers that left the production binary.
func TestCommandTable(t *testing.T) {
	app := newApp()
	want := map[string][]string{
		"bench": {"rps", "push", "session", "idle", "handshake", "cluster", "storm", "accept", "budget", "drain", "upgrade", "compare"},
		"peer":  {"tlv-goroutine", "goproxy"},
	}
	for group, subs := range want {
		cmd := app.Command(group)
		if cmd == nil {
			t.Fatalf("no %s command", group)
		}
		for _, s := range subs {
			if cmd.Command(s) == nil {
				t.Errorf("no %s %s command", group, s)
			}
		}
	}
}

// TestTidegateEnv: tidegateEnv passes KEY=VALUE values through in order and
// refuses any other, naming it.
func TestTidegateEnv(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the error; "" for none
	}{
		{nil, ""},
		{[]string{"GOGC=50"}, ""},
		{[]string{"GOMAXPROCS=1", "GODEBUG=memprofilerate=1", "EMPTY="}, ""},
		{[]string{"GODEBUG=gctrace=1,madvdontneed=1", "GOGC=50"}, ""}, // a comma stays in its value
		{[]string{"GOGC"}, `--tidegate-env "GOGC": want KEY=VALUE`},
		{[]string{"GOGC=50", "=50"}, `--tidegate-env "=50": no key`},
		{[]string{"GO GC=50"}, `--tidegate-env "GO GC=50": key "GO GC" has white space`},
		{[]string{"GOGC=5\x000"}, `--tidegate-env "GOGC=5\x000": it holds a NUL byte`},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		if err := tidegateEnvFlag("GOGC=50").Apply(fs); err != nil {
			t.Fatal(err)
		}
		for _, a := range tc.args {
			if err := fs.Set("tidegate-env", a); err != nil {
				t.Fatal(err)
			}
		}
		env, err := tidegateEnv(cli.NewContext(cli.NewApp(), fs, nil))
		switch {
		case tc.want == "" && (err != nil || !slices.Equal(env, tc.args)):
			t.Errorf("%q: %q, %v; want the values back", tc.args, env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %q, %v; want an error containing %q", tc.args, env, err, tc.want)
		}
	}
}

// TestTidegateEnvRefusedFirst: every command with --tidegate-env refuses a
// bad value before it starts anything (there is no tidegate binary here).
func TestTidegateEnvRefusedFirst(t *testing.T) {
	for _, cmd := range []string{"idle", "handshake", "session"} {
		_, err := runApp(t, "bench", cmd, "--tidegate-bin", "/nonexistent/tidegate", "--tidegate-env", "GOGC")
		if err == nil || !strings.Contains(err.Error(), `--tidegate-env "GOGC": want KEY=VALUE`) {
			t.Errorf("bench %s: %v, want the bad --tidegate-env named", cmd, err)
		}
		if h := newApp().Command("bench").Command(cmd); h == nil || !strings.Contains(flagUsage(h, "tidegate-env"), "added to each tidegate proxy's environment (") {
			t.Errorf("bench %s: no --tidegate-env of tidegateEnvFlag's", cmd)
		}
	}
}

// flagUsage returns the usage of cmd's flag name, or "".
func flagUsage(cmd *cli.Command, name string) string {
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			if d, ok := f.(cli.DocGenerationFlag); ok {
				return d.GetUsage()
			}
		}
	}
	return ""
}

// TestFlagsOnly: each benchmark that takes flags only refuses an argument,
// naming the command and the argument, before it starts anything.
func TestFlagsOnly(t *testing.T) {
	for _, cmd := range []string{"accept", "budget", "drain", "storm", "upgrade"} {
		_, err := runApp(t, "bench", cmd, "stray")
		if want := cmd + `: unexpected argument "stray" (flags only)`; err == nil || err.Error() != want {
			t.Errorf("bench %s stray: %v, want %q", cmd, err, want)
		}
	}
}

// TestPrintResult: --json picks the JSON writer, else the table writer, and
// either's error comes back.
func TestPrintResult(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		json     bool
		fail     error
		wantCall string
	}{
		{false, nil, "table"},
		{true, nil, "json"},
		{false, boom, "table"},
		{true, boom, "json"},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.Bool("json", tc.json, "")
		var called []string
		writer := func(name string) func(io.Writer, int) error {
			return func(w io.Writer, r int) error {
				if w != os.Stdout || r != 7 {
					t.Errorf("%s writer got %v and %d, want standard output and the result", name, w, r)
				}
				called = append(called, name)
				return tc.fail
			}
		}
		err := printResult(cli.NewContext(cli.NewApp(), fs, nil), 7, writer("json"), writer("table"))
		if !slices.Equal(called, []string{tc.wantCall}) || err != tc.fail {
			t.Errorf("--json=%v, writers failing with %v: called %v, returned %v; want %s once and that error", tc.json, tc.fail, called, err, tc.wantCall)
		}
	}
}

// TestWriteResultsFile: without --out nothing is written; with it the
// writer gets the directory, the label and the result, and its error comes
// back.
func TestWriteResultsFile(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		out, label string
		fail       error
		wantCall   string // "" for no call
	}{
		{"", "", nil, ""},
		{"", "x", nil, ""},
		{"dir", "", nil, "dir|"},
		{"dir", "after", nil, "dir|after"},
		{"dir", "after", boom, "dir|after"},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.String("out", tc.out, "")
		fs.String("label", tc.label, "")
		var called []string
		err := writeResultsFile(cli.NewContext(cli.NewApp(), fs, nil), zerolog.Nop(), 7, func(dir, label string, r int) (string, error) {
			if r != 7 {
				t.Errorf("the writer got result %d, want 7", r)
			}
			called = append(called, dir+"|"+label)
			return filepath.Join(dir, "f.md"), tc.fail
		})
		want := []string{tc.wantCall}
		if tc.wantCall == "" {
			want = nil
		}
		if !slices.Equal(called, want) || err != tc.fail {
			t.Errorf("--out %q --label %q: called %q, returned %v; want %q and %v", tc.out, tc.label, called, err, want, tc.fail)
		}
	}
}

func TestFailedExit(t *testing.T) {
	err := failedExit("drain", []string{"a repeat 0: lost", "b repeat 1: died"})
	if exitCode(err) != 1 || err.Error() != "drain benchmark FAILED: 2 failures: a repeat 0: lost; b repeat 1: died" {
		t.Fatalf("%v (exit %d)", err, exitCode(err))
	}
}
