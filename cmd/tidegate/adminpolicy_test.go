package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
)

// writeToken writes token to a file of mode 0600 in a new directory and
// returns its path, for admin.token_file.
func writeToken(t *testing.T, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// adminSection is the admin section that configures tokenFile.
func adminSection(tokenFile string) string {
	return fmt.Sprintf("admin: {token_file: %q}\n", tokenFile)
}

// request sends method to http://addr+path with the headers (see
// testserver.Request) and returns the status and body.
func request(t *testing.T, method, addr, path string, headers ...string) (int, string) {
	t.Helper()
	return testserver.Request(t, method, "http://"+addr+path, headers...)
}

// postReload posts /-/reload to addr with token (none when empty) and the
// headers.
func postReload(t *testing.T, addr, token string, headers ...string) (int, string) {
	t.Helper()
	if token != "" {
		headers = append(headers, "Authorization", "Bearer "+token)
	}
	return request(t, http.MethodPost, addr, "/-/reload", headers...)
}

// TestProxyMetricsPolicy: the proxy's metrics address, as the issue tried
// it. Without admin.token_file, POST /-/reload is refused saying how to
// enable it and that SIGHUP still reloads. With it, the curl
// (Origin http://evil.example, Content-Type text/plain) is refused even
// with the token, as are Host: evil.example (on the admin API too) and a
// wrong or missing token; the token reloads, and a reload re-reads the
// token file (and one that went bad is refused, the running token kept).
// Profiles are off without --pprof; with it, seconds=3600 is
// refused.
func TestProxyMetricsPolicy(t *testing.T) {
	cfg := proxyConfig(t, acceptor(t))
	addr := runCommand(t, "proxy", "--config", cfg)
	code, body := postReload(t, addr, "")
	if code != http.StatusForbidden || !strings.Contains(body, "admin.token_file") || !strings.Contains(body, "SIGHUP still reloads") {
		t.Fatalf("POST /-/reload without admin.token_file: %d %s; want 403 naming admin.token_file and SIGHUP", code, body)
	}
	if code, body := request(t, http.MethodGet, addr, "/debug/pprof/"); code != http.StatusNotFound || !strings.Contains(body, "--pprof") {
		t.Fatalf("/debug/pprof/ without --pprof: %d %s; want 404 naming --pprof", code, body)
	}

	const token = "proxy-test-token-0123456789"
	tokenFile := writeToken(t, token)
	path := writeConfig(t, readFile(t, cfg)+adminSection(tokenFile))
	addr = runCommand(t, "proxy", "--config", path, "--pprof")
	for _, tc := range []struct {
		name    string
		token   string
		headers []string
		code    int
		says    string
	}{
		{"the issue's curl", "", []string{"Origin", "http://evil.example", "Content-Type", "text/plain"}, http.StatusForbidden, "evil.example"},
		{"the issue's curl with the token", token, []string{"Origin", "http://evil.example", "Content-Type", "text/plain"}, http.StatusForbidden, "cross-site"},
		{"Host evil.example with the token", token, []string{"Host", "evil.example"}, http.StatusForbidden, "DNS rebinding"},
		{"no token", "", nil, http.StatusUnauthorized, "Authorization: Bearer TOKEN"},
		{"a wrong token", token + "x", nil, http.StatusUnauthorized, "not the configured one"},
		{"the token", token, nil, http.StatusOK, "reloaded"},
	} {
		if code, body := postReload(t, addr, tc.token, tc.headers...); code != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %s; want %d with %q", tc.name, code, body, tc.code, tc.says)
		}
	}
	for _, p := range []string{"/api/v1/config", "/", "/debug/pprof/"} {
		if code, body := request(t, http.MethodGet, addr, p, "Host", "evil.example"); code != http.StatusForbidden || !strings.Contains(body, "DNS rebinding") {
			t.Errorf("%s with Host evil.example: %d %s; want 403", p, code, body)
		}
	}
	if code, body := request(t, http.MethodGet, addr, "/debug/pprof/profile?seconds=3600"); code != http.StatusBadRequest || !strings.Contains(body, "from 1 to 60") {
		t.Errorf("/debug/pprof/profile?seconds=3600: %d %s; want 400", code, body)
	}
	if code, body := request(t, http.MethodGet, addr, "/debug/pprof/"); code != http.StatusOK {
		t.Errorf("/debug/pprof/ with --pprof: %d %.200s", code, body)
	}

	// A reload re-reads the token file: the new token writes, the old one
	// no longer does.
	const next = "proxy-test-token-next-98765"
	if err := os.WriteFile(tokenFile, []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, body := postReload(t, addr, token); code != http.StatusOK {
		t.Fatalf("the reload that re-reads the token: %d %s", code, body)
	}
	if code, body := postReload(t, addr, token); code != http.StatusUnauthorized {
		t.Errorf("the old token after the reload: %d %s, want 401", code, body)
	}
	if code, body := postReload(t, addr, next); code != http.StatusOK {
		t.Errorf("the new token after the reload: %d %s, want 200", code, body)
	}

	// A token file that went bad refuses the reload, naming it; the
	// running token stays.
	if err := os.Chmod(tokenFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := postReload(t, addr, next); code != http.StatusConflict || !strings.Contains(body, "admin.token_file") || !strings.Contains(body, "chmod 600") {
		t.Errorf("a reload with a world-readable token file: %d %s; want 409 naming admin.token_file", code, body)
	}
	if err := os.Chmod(tokenFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, body := postReload(t, addr, next); code != http.StatusOK {
		t.Errorf("the running token after a refused reload: %d %s, want 200", code, body)
	}
}

// TestProxyTokenFileProblems: a token file that others can read, that is
// empty, too short or missing is a configuration problem naming
// admin.token_file and what to do.
func TestProxyTokenFileProblems(t *testing.T) {
	base := "listeners: [{listen: 127.0.0.1:0}]\ndefault_group: main\ngroups: {main: {backends: [{addr: 127.0.0.1:1}]}}\n"
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		says          string
	}{
		{"world-readable", "proxy-test-token-0123456789", 0o644, "has mode 0644: other users may read or change the token; chmod 600"},
		{"group-readable", "proxy-test-token-0123456789", 0o640, "has mode 0640"},
		{"empty", "\n", 0o600, "is empty: write a token of at least 16 characters"},
		{"short", "abc", 0o600, "holds a token of 3 characters: want at least 16"},
		{"two lines", "proxy-test-token\nsecond-line-token", 0o600, "several lines"},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.content), tc.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tc.mode); err != nil { // past the umask
			t.Fatal(err)
		}
		cfg := writeConfig(t, base+adminSection(path))
		err := testApp(&syncBuffer{}).Run([]string{"tidegate", "proxy", "--config", cfg, "--validate-config"})
		if exitCode(err) != exitConfig || !strings.Contains(err.Error(), ":4:") || !strings.Contains(err.Error(), "admin.token_file: ") || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want exit %d naming admin.token_file and %q", tc.name, err, exitConfig, tc.says)
		}
		if strings.Contains(fmt.Sprint(err), "proxy-test-token") {
			t.Errorf("%s: the problem shows the token: %v", tc.name, err)
		}
	}
	cfg := writeConfig(t, base+adminSection(filepath.Join(dir, "missing")))
	if err := testApp(&syncBuffer{}).Run([]string{"tidegate", "proxy", "--config", cfg, "--validate-config"}); exitCode(err) != exitConfig ||
		!strings.Contains(err.Error(), "admin.token_file: reading the token") || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing token file: %v", err)
	}
}
