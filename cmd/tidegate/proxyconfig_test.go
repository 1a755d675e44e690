package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// writeConfig writes text to a proxy.yaml in a temporary directory.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proxy.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProxyConfigProblemsAllReported: a configuration with several
// problems gets all of them, one a line with file:line:col, and exit 2,
// both when starting and with --validate-config.
func TestProxyConfigProblemsAllReported(t *testing.T) {
	path := writeConfig(t, `listeners:
  - listen: 127.0.0.1:25577
    colour: blue
default_group: main
groups:
  main: {backends: [{addr: 127.0.0.1:25565}]}
limits:
  handshake_timout: 5s
  connect_timeout: -3s
`)
	want := "tidegate: configuration is invalid:\n" +
		path + `:3:5: listeners[0].colour: unknown key; the keys here are listen, mode, group and proxy_protocol` + "\n" +
		path + `:8:3: limits.handshake_timout: unknown key (did you mean "handshake_timeout"?)` + "\n" +
		path + `:9:20: limits.connect_timeout: -3s must be positive`
	for _, args := range [][]string{
		{"tidegate", "proxy", "--config", path},
		{"tidegate", "proxy", "--config", path, "--validate-config"},
	} {
		err := testApp(&syncBuffer{}).Run(args)
		if code := exitCode(err); code != exitConfig || err.Error() != want {
			t.Errorf("%v: exit code %d, message:\n%v\nwant %d and:\n%s", args, code, err, exitConfig, want)
		}
	}
}

// TestProxyValidateConfigPrintsWarnings: a valid configuration that routes
// no host anywhere is valid (exit 0) and --validate-config says why it is
// likely not what was meant.
func TestProxyValidateConfigPrintsWarnings(t *testing.T) {
	path := writeConfig(t, "listeners: [{listen: 127.0.0.1:0}]\ngroups: {main: {backends: [{addr: 127.0.0.1:1}]}}\n")
	var out bytes.Buffer
	app := testApp(&syncBuffer{})
	app.Writer = &out
	if err := app.Run([]string{"tidegate", "proxy", "--config", path, "--validate-config"}); err != nil {
		t.Fatal(err)
	}
	want := "configuration is valid\nwarnings:\n" +
		path + `:1:13: listeners[0]: no routes and no default_group: every login is refused with "Unknown server address"; set default_group to the group hosts should go to` + "\n" +
		path + `:2:16: groups.main: no listener sends sessions here: it is not default_group, a route's group or a raw listener's group` + "\n"
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}
