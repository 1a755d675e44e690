package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdminAllowedHostsChecked: an allowed host is a bare name or
// address; an empty one, one with a port, or one with a scheme, path or
// wildcard is a problem naming its index.
func TestAdminAllowedHostsChecked(t *testing.T) {
	base := "listeners: [{listen: 127.0.0.1:0}]\ndefault_group: main\ngroups: {main: {backends: [{addr: 127.0.0.1:1}]}}\n"
	_, _, err := Parse("proxy.yaml", []byte(base+`admin: {allowed_hosts: [tidegate.internal, "::1", "", "admin.example:9225", "http://x/", "*.example"]}`+"\n"))
	want := []string{
		`admin.allowed_hosts[2]: is empty`,
		`admin.allowed_hosts[3]: "admin.example:9225" has a port`,
		`admin.allowed_hosts[4]: "http://x/": want a host name or address`,
		`admin.allowed_hosts[5]: "*.example": want a host name or address`,
	}
	if err == nil {
		t.Fatal("no problems")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("problems lack %q:\n%v", w, err)
		}
	}
	if strings.Contains(err.Error(), "[0]") || strings.Contains(err.Error(), "[1]") {
		t.Errorf("a good host is a problem:\n%v", err)
	}
}

// TestAdminTokenRead: Load reads the token from token_file, relative to
// the configuration's directory, trimmed of its line end; the view shows
// the file's name, not the token. A new token in the same file is a new
// configuration (its hash changes, as a new Redis password's does), so
// that config_hash tells which token a reload took.
func TestAdminTokenRead(t *testing.T) {
	dir := t.TempDir()
	const token = "config-test-token-0123456789"
	if err := os.WriteFile(filepath.Join(dir, "admin.token"), []byte(token+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "proxy.yaml")
	text := "listeners: [{listen: 127.0.0.1:0}]\ndefault_group: main\ngroups: {main: {backends: [{addr: 127.0.0.1:1}]}}\nadmin: {token_file: admin.token}\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Admin.Token().Reveal(); got != token {
		t.Fatalf("token %q, want %q", got, token)
	}
	v, err := cfg.View()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(v.Config), token) || !strings.Contains(string(v.Config), `"token_file":"admin.token"`) {
		t.Fatalf("view: %s", v.Config)
	}
	hash := cfg.Hash()
	if err := os.WriteFile(filepath.Join(dir, "admin.token"), []byte("config-test-token-other-9876"), 0o600); err != nil {
		t.Fatal(err)
	}
	again, _, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if again.Admin.Token().Reveal() != "config-test-token-other-9876" || again.Hash() == hash {
		t.Fatalf("after a new token: token %q, hash %s (was %s)", again.Admin.Token().Reveal(), again.Hash(), hash)
	}
}
