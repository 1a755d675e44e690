package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/session/proxy/admin"
)

// TestProxyServesAdminBesideMetrics: `tidegate proxy` serves the admin
// API and the status page on --metrics-listen, beside /metrics and the
// health endpoints; the other commands do not.
func TestProxyServesAdminBesideMetrics(t *testing.T) {
	backend := acceptor(t)
	addr := runCommand(t, "proxy", "--config", proxyConfig(t, backend))
	code, body := get(t, addr, "/api/v1/backends")
	var v admin.BackendsView
	if code != http.StatusOK || json.Unmarshal(body, &v) != nil || len(v.Backends) != 1 || v.Backends[0].Addr != backend || v.ConfigHash == "" {
		t.Fatalf("/api/v1/backends: %d %s", code, body)
	}
	for path, want := range map[string]string{
		"/api/v1/sessions":   `"open":0`,
		"/api/v1/rejections": `"kept_per_loop":64`,
		"/api/v1/config":     `"admin":{"enabled":true,"allow_remote":false,"allowed_hosts":[],"token_file":""}`,
		"/":                  "<title>tidegate proxy status</title>",
		"/metrics":           "tidegate_proxy_accepted_total",
	} {
		if code, body := get(t, addr, path); code != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("%s: %d, want 200 with %s:\n%s", path, code, want, body)
		}
	}
	if code, _ := getReport(t, addr, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	if code, body := get(t, addr, "/other"); code != http.StatusNotFound {
		t.Errorf("/other: %d %s, want 404", code, body)
	}

	serve := runCommand(t, "serve", "--listen", "127.0.0.1:0", "--loops", "1")
	for _, path := range []string{"/", "/api/v1/backends"} {
		if code, body := get(t, serve, path); code != http.StatusNotFound {
			t.Errorf("serve %s: %d %s, want 404 (only the proxy has an admin API)", path, code, body)
		}
	}
}

// TestProxyAdminRefusedOffLoopback: with --metrics-listen on a
// non-loopback address of this machine, a request to it (from that
// address, so not over loopback) gets 403 from the admin API and the
// status page and 200 from /metrics and /healthz; with admin.allow_remote
// the admin API answers it too.
func TestProxyAdminRefusedOffLoopback(t *testing.T) {
	ip := testserver.NonLoopbackIPv4(t)
	backend := acceptor(t)
	cfg := proxyConfig(t, backend)
	addr := runCommandMetrics(t, net.JoinHostPort(ip, "0"), "proxy", "--config", cfg)
	for _, path := range []string{"/api/v1/backends", "/api/v1/sessions?user=x", "/api/v1/config", "/"} {
		code, body := get(t, addr, path)
		if code != http.StatusForbidden || !strings.Contains(string(body), "set admin.allow_remote: true") {
			t.Errorf("%s on %s: %d %s, want 403 naming admin.allow_remote", path, addr, code, body)
		}
	}
	for _, path := range []string{"/metrics", "/healthz"} {
		if code, _ := get(t, addr, path); code != http.StatusOK {
			t.Errorf("%s on %s: %d, want 200", path, addr, code)
		}
	}

	remote := writeConfig(t, readFile(t, cfg)+"admin: {allow_remote: true}\n")
	addr = runCommandMetrics(t, net.JoinHostPort(ip, "0"), "proxy", "--config", remote)
	if code, body := get(t, addr, "/api/v1/backends"); code != http.StatusOK || !strings.Contains(string(body), backend) {
		t.Fatalf("with allow_remote, /api/v1/backends on %s: %d %s", addr, code, body)
	}
}

// TestValidateConfigChecksAdmin: --validate-config checks the admin keys:
// their names and kinds are problems (exit 2, with line and column), and
// allow_remote without enabled is a warning (it then covers less).
func TestValidateConfigChecksAdmin(t *testing.T) {
	base := "listeners: [{listen: 127.0.0.1:0}]\ndefault_group: main\ngroups: {main: {backends: [{addr: 127.0.0.1:1}]}}\n"
	bad := writeConfig(t, base+"admin:\n  enabled: yes\n  allow_remot: true\n")
	want := "tidegate: configuration is invalid:\n" +
		bad + `:5:12: admin.enabled: "yes": want true or false` + "\n" +
		bad + `:6:3: admin.allow_remot: unknown key (did you mean "allow_remote"?)`
	err := testApp(&syncBuffer{}).Run([]string{"tidegate", "proxy", "--config", bad, "--validate-config"})
	if code := exitCode(err); code != exitConfig || err.Error() != want {
		t.Errorf("exit code %d, message:\n%v\nwant %d and:\n%s", code, err, exitConfig, want)
	}

	warn := writeConfig(t, base+"admin: {enabled: false, allow_remote: true}\n")
	var out bytes.Buffer
	app := testApp(&syncBuffer{})
	app.Writer = &out
	if err := app.Run([]string{"tidegate", "proxy", "--config", warn, "--validate-config"}); err != nil {
		t.Fatal(err)
	}
	if want := "configuration is valid\nwarnings:\n" + warn +
		":4:39: admin.allow_remote: covers only the profiles, the checks' details and POST /-/reload while admin.enabled is false: the admin API and status page are off\n"; out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}
