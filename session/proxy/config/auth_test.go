package config

import (
	"strings"
	"testing"
	"time"
)

func TestAuthSettings(t *testing.T) {
	cfg, _, err := Parse("proxy.yaml", []byte(loginYAML("    login: online\n")))
	if err != nil {
		t.Fatal(err)
	}
	if want := defaultAuthConfig(); cfg.Auth != want || cfg.Auth.SessionServer != DefaultSessionServer {
		t.Errorf("auth = %+v, want the defaults %+v", cfg.Auth, want)
	}
	if !cfg.OnlineGroups() {
		t.Error("OnlineGroups is false with a group in login: online")
	}
	for _, tc := range []struct{ keys, want string }{
		{"online_mode: {session_server: \"http://127.0.0.1:8080/x\", prevent_proxy_connections: true, timeout: 2s, encryption_timeout: 1s, workers: 2, queue: 8}\n", ""},
		{"online_mode: {session_server: \"ftp://example.com\"}\n", `online_mode.session_server: "ftp://example.com": want an http or https base URL`},
		{"online_mode: {session_server: \"https://example.com/?a=b\"}\n", "online_mode.session_server"},
		{"online_mode: {timeout: 0s}\n", "online_mode.timeout: 0s must be positive"},
		{"online_mode: {encryption_timeout: -1s}\n", "online_mode.encryption_timeout: -1s must be positive"},
		{"online_mode: {workers: 0}\n", "online_mode.workers: 0: want 1 to 1024"},
		{"online_mode: {queue: 0}\n", "online_mode.queue: 0: want 1 to 1048576"},
	} {
		cfg, _, err := Parse("proxy.yaml", []byte(tc.keys+loginYAML("    login: online\n")))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.keys, err)
		case tc.want == "" && (cfg.Auth.Timeout != 2*time.Second || !cfg.Auth.PreventProxyConnections || cfg.Auth.Workers != 2):
			t.Errorf("%q: auth = %+v", tc.keys, cfg.Auth)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one containing %q", tc.keys, err, tc.want)
		}
	}
	a, _, _ := Parse("proxy.yaml", []byte(loginYAML("")))
	b, _, _ := Parse("proxy.yaml", []byte("online_mode: {workers: 3}\n"+loginYAML("")))
	if ch := a.RestartChanges(b); len(ch) != 1 || !strings.Contains(ch[0], "online_mode changed") {
		t.Errorf("RestartChanges = %q, want auth's", ch)
	}
}
