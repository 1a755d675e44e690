package main

import (
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/leaktest"
)

// TestMain fails the run when the tests leave goroutines running.
func TestMain(m *testing.M) {
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
