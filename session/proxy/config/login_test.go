package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loginYAML is a configuration whose group main has the given extra keys.
func loginYAML(groupKeys string) string {
	return fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: main
groups:
  main:
    backends: [{addr: "127.0.0.1:25565"}]
%s`, groupKeys)
}

func TestLoginSettingsProblems(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "forwarding.secret"), []byte("  s3cret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.secret"), []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "proxy.yaml")
	for _, tc := range []struct {
		keys string
		want string // a problem's text; "" for none
	}{
		{"", ""},
		{"    login: offline\n", ""},
		{"    login: offline\n    forwarding: bungeecord\n", ""},
		{"    login: offline\n    forwarding: velocity\n    forwarding_key_file: forwarding.secret\n", ""},
		{"    login: offline\n    compression_threshold: off\n", ""},
		{"    login: offline\n    compression_threshold: 256\n", ""},
		{"    login: online\n", ""},
		{"    login: online\n    forwarding: velocity\n    forwarding_key_file: forwarding.secret\n", ""},
		{"    login: Offline\n", `groups.main.login: "Offline": want transparent, offline or online`},
		{"    forwarding: velocity\n    forwarding_key_file: forwarding.secret\n", "groups.main.forwarding: velocity forwarding needs the proxy to complete the login: set login: offline"},
		{"    login: offline\n    forwarding: velocity\n", "groups.main.forwarding_key_file: velocity forwarding needs the file holding its secret"},
		{"    login: offline\n    forwarding: velocity\n    forwarding_secret: inline\n", ""},
		{"    login: offline\n    forwarding: velocity\n    forwarding_secret: inline\n    forwarding_key_file: forwarding.secret\n", "groups.main.forwarding_secret: set the secret once"},
		{"    login: offline\n    forwarding: modern\n", `groups.main.forwarding: "modern": want none, bungeecord or velocity`},
		{"    login: offline\n    forwarding_key_file: forwarding.secret\n", "groups.main.forwarding_key_file: only velocity forwarding takes a secret (forwarding is none)"},
		{"    login: offline\n    forwarding: velocity\n    forwarding_key_file: empty.secret\n", "empty.secret is empty: the secret must not be"},
		{"    login: offline\n    forwarding: velocity\n    forwarding_key_file: missing.secret\n", "groups.main.forwarding_key_file: reading the secret: "},
		{"    login: offline\n    compression_threshold: -1\n", `groups.main.compression_threshold: "-1": want backend, off or a size in bytes from 0 to 2097151`},
		{"    login: offline\n    compression_threshold: lots\n", `"lots": want backend, off or a size in bytes`},
		{"    compression_threshold: 256\n", "groups.main.compression_threshold: only a login the proxy completes (login: offline) has a threshold of its own"},
		{"forwarding: velocity\n", "forwarding: velocity forwarding is set per group"},
	} {
		_, _, err := Parse(name, []byte(loginYAML(tc.keys)))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.keys, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one with %q", tc.keys, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "s3cret-value"):
			t.Errorf("%q: the error shows the secret: %v", tc.keys, err)
		}
	}
}

func TestLoginSettingsValues(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "forwarding.secret"), []byte("s3cret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Parse(filepath.Join(dir, "proxy.yaml"), []byte(loginYAML(
		"    login: offline\n    forwarding: velocity\n    forwarding_key_file: forwarding.secret\n    compression_threshold: 128\n")))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("validating the loaded configuration again: %v", err)
	}
	g := cfg.Groups["main"]
	if g.LoginMode() != LoginOffline || cfg.ForwardingOf(g) != ForwardVelocity || g.ForwardingSecret.Reveal() != "s3cret-value" {
		t.Errorf("login %q, forwarding %q, secret %q", g.LoginMode(), cfg.ForwardingOf(g), g.ForwardingSecret.Reveal())
	}
	if th, backend := g.ClientThreshold(); th != 128 || backend {
		t.Errorf("ClientThreshold = %d, %t; want 128, false", th, backend)
	}
	if v, err := cfg.View(); err != nil || strings.Contains(string(v.Config), "s3cret-value") {
		t.Errorf("the view shows the secret or fails: %v", err)
	}
	if s := fmt.Sprintf("%v %+v %#v", g, g, g); strings.Contains(s, "s3cret-value") {
		t.Errorf("formatting the group shows the secret: %s", s)
	}
	plain := GroupConfig{}
	if plain.LoginMode() != LoginTransparent || cfg.ForwardingOf(plain) != ForwardNone {
		t.Errorf("defaults: %q, %q", plain.LoginMode(), cfg.ForwardingOf(plain))
	}
	if th, backend := plain.ClientThreshold(); !backend || th != 0 {
		t.Errorf("default ClientThreshold = %d, %t", th, backend)
	}
	if th, _ := (GroupConfig{CompressionThreshold: "off"}).ClientThreshold(); th != -1 {
		t.Errorf("off: %d", th)
	}
}
