package lifecycle

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/adminaccess"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
)

// TestSendWritesNeedTheToken: the admin API's sends (moving players) are
// writes: refused without a configured token (saying how to enable them),
// refused without the request's token, served with it; the admin API's
// reads still need none.
func TestSendWritesNeedTheToken(t *testing.T) {
	admin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "admin "+r.Method+" "+r.URL.Path)
	})
	h := NewRegistry()
	base := "http://" + serve(t, h, MetricsOptions{Admin: admin, Log: zerolog.Nop(), Policy: testPolicy()})
	noToken := adminaccess.New(adminaccess.Rules{}, adminaccess.Knobs{Token: "set admin.token_file"})
	off := "http://" + serve(t, h, MetricsOptions{Admin: admin, Log: zerolog.Nop(), Policy: noToken})
	for _, path := range []string{"/api/v1/send", "/api/v1/sessions/Alice/send"} {
		if code, body := testserver.Request(t, http.MethodPost, off+path, "Authorization", "Bearer "+testToken); code != http.StatusForbidden || !strings.Contains(body, "admin.token_file") {
			t.Errorf("POST %s with no token configured: %d %s, want 403 saying how to enable it", path, code, body)
		}
		if code, body := testserver.Request(t, http.MethodPost, base+path); code != http.StatusUnauthorized || strings.Contains(body, "admin POST") {
			t.Errorf("POST %s without the token: %d %s, want 401", path, code, body)
		}
		if code, body := post(t, base+path); code != http.StatusOK || body != "admin POST "+path {
			t.Errorf("POST %s with the token: %d %s, want the admin API's answer", path, code, body)
		}
	}
	if code, body := testserver.Request(t, http.MethodGet, off+"/api/v1/sessions"); code != http.StatusOK || body != "admin GET /api/v1/sessions" {
		t.Errorf("GET /api/v1/sessions without a token: %d %s, want the read served", code, body)
	}
}
