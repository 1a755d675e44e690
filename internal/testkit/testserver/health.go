package testserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// HealthReport is the body of /healthz or /readyz as a client decodes it.
type HealthReport struct {
	OK     bool `json:"ok"`
	PID    int  `json:"pid"`
	Checks []struct {
		Name   string          `json:"name"`
		OK     bool            `json:"ok"`
		Detail json.RawMessage `json:"detail"`
	} `json:"checks"`
}

// GetHealth fetches /healthz or /readyz at url and decodes it; it fails t
// unless the status is 200 with ok true or 503 with ok false.
func GetHealth(t testing.TB, url string) (int, HealthReport) {
	t.Helper()
	code, body, _ := Get(t, url)
	var r HealthReport
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s: %v in %q", url, err, body)
	}
	if r.OK != (code == http.StatusOK) || (code != http.StatusOK && code != http.StatusServiceUnavailable) {
		t.Fatalf("%s answered %d with ok=%v: %s", url, code, r.OK, body)
	}
	return code, r
}

// Names lists the names of the report's checks, with a ! before failing
// ones: "proxy,draining,!backends".
func (r HealthReport) Names() string {
	var names []string
	for _, c := range r.Checks {
		if !c.OK {
			names = append(names, "!"+c.Name)
		} else {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, ",")
}

// Detail decodes the detail of the check named name into v; it fails t when
// there is no such check.
func (r HealthReport) Detail(t testing.TB, name string, v any) {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			if err := json.Unmarshal(c.Detail, v); err != nil {
				t.Fatalf("detail of %s: %v in %s", name, err, c.Detail)
			}
			return
		}
	}
	t.Fatalf("no check %s in %s", name, r.Names())
}
