package adminaccess

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
)

const testToken = "s3cret-token-0123456789"

var testKnobs = Knobs{
	AllowRemote:  "set allow_remote",
	AllowedHosts: "list it in allowed_hosts",
	Token:        "set token_file",
	Profiles:     "start with --pprof",
}

// serve serves p's classes on a real listener at addr until the test ends:
// /read, /write (POST), /debug/pprof/ and /debug/pprof/profile. It returns
// the base URL.
func serve(t *testing.T, p *Policy, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "done\n") })
	mux := http.NewServeMux()
	mux.Handle("/read", p.Read(ok))
	mux.Handle("/write", p.Write("writing", "SIGHUP does it too", ok))
	mux.Handle("/debug/pprof/", p.Profiles(http.HandlerFunc(httppprof.Index)))
	mux.Handle("/debug/pprof/profile", p.Profiles(http.HandlerFunc(httppprof.Profile)))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return "http://" + ln.Addr().String()
}

// refusal decodes a refusal's body; it fails t unless it is one.
func refusal(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" {
		t.Fatalf("refusal body %q: %v", body, err)
	}
	return e.Error
}

// TestOverLoopback: only loopback to loopback is loopback; an address that
// cannot be read counts as remote.
func TestOverLoopback(t *testing.T) {
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	for _, tc := range []struct {
		name  string
		local net.Addr
		from  string
		want  bool
	}{
		{"ipv4 loopback", tcp("127.0.0.1:9225"), "127.0.0.1:50000", true},
		{"other 127/8", tcp("127.0.0.2:9225"), "127.0.0.3:50000", true},
		{"ipv6 loopback", tcp("[::1]:9225"), "[::1]:50000", true},
		{"ipv4-mapped loopback", tcp("[::ffff:127.0.0.1]:9225"), "[::ffff:127.0.0.1]:50000", true},
		{"remote client", tcp("192.0.2.2:9225"), "198.51.100.9:50000", false},
		{"local non-loopback address", tcp("192.0.2.2:9225"), "192.0.2.2:50000", false},
		{"unspecified local", tcp("[::]:9225"), "127.0.0.1:50000", false},
		{"no local address", nil, "127.0.0.1:50000", false},
		{"unreadable remote", tcp("127.0.0.1:9225"), "@", false},
	} {
		if got := overLoopback(tc.local, tc.from); got != tc.want {
			t.Errorf("%s: loopback %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestHostAllowed: localhost, names under .localhost, loopback addresses
// and the allowed names, with or without a port, in any case.
func TestHostAllowed(t *testing.T) {
	allowed := []string{"admin.example.internal"}
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:9225": true, "localhost.:9225": true, "tidegate.localhost:9225": true,
		"127.0.0.1:9225": true, "127.1.2.3": true, "[::1]:9225": true, "[::ffff:127.0.0.1]:9225": true,
		"admin.example.internal:9225": true, "Admin.Example.Internal": true,
		"evil.example": false, "evil.example:9225": false, "localhost.evil.example": false, "192.0.2.1:9225": false,
		"": false, "[::]:9225": false, "0.0.0.0:9225": false,
	} {
		if got := hostAllowed(host, allowed); got != want {
			t.Errorf("Host %q: allowed %v, want %v", host, got, want)
		}
	}
}

// TestReadRefusesForeignHost: over loopback, a Host header that is not
// loopback, localhost or an allowed name gets 403 saying why (DNS
// rebinding) and how to allow it; allowed names and allow_remote answer.
func TestReadRefusesForeignHost(t *testing.T) {
	p := New(Rules{}, testKnobs)
	base := serve(t, p, "127.0.0.1:0")
	code, body := testserver.Request(t, "GET", base+"/read", "Host", "evil.example")
	if why := refusal(t, body); code != http.StatusForbidden || !strings.Contains(why, `"evil.example"`) ||
		!strings.Contains(why, "DNS rebinding") || !strings.Contains(why, "list it in allowed_hosts") {
		t.Fatalf("Host evil.example: %d %s; want 403 naming the host, DNS rebinding and the knob", code, body)
	}
	port := base[strings.LastIndex(base, ":")+1:]
	for _, host := range []string{"", "localhost:" + port, "127.0.0.1:" + port} {
		if code, body := testserver.Request(t, "GET", base+"/read", "Host", host); code != http.StatusOK || body != "done\n" {
			t.Fatalf("Host %q: %d %s, want 200", host, code, body)
		}
	}
	p.Set(Rules{AllowedHosts: []string{"evil.example"}})
	if code, body := testserver.Request(t, "GET", base+"/read", "Host", "evil.example:"+port); code != http.StatusOK {
		t.Fatalf("Host evil.example when allowed: %d %s", code, body)
	}
	p.Set(Rules{AllowRemote: true})
	if code, body := testserver.Request(t, "GET", base+"/read", "Host", "other.example"); code != http.StatusOK {
		t.Fatalf("Host other.example with AllowRemote: %d %s", code, body)
	}
}

// TestReadRefusesNonLoopback: a request to a non-loopback address of this
// machine gets 403 naming where it came from and the knob, for every
// class; with AllowRemote it is answered.
func TestReadRefusesNonLoopback(t *testing.T) {
	ip := testserver.NonLoopbackIPv4(t)
	p := New(Rules{Profiles: true, Token: testToken}, testKnobs)
	base := serve(t, p, net.JoinHostPort(ip, "0"))
	for _, path := range []string{"/read", "/debug/pprof/"} {
		code, body := testserver.Request(t, "GET", base+path)
		if why := refusal(t, body); code != http.StatusForbidden || !strings.Contains(why, "came from "+ip+":") || !strings.Contains(why, "set allow_remote to answer it") {
			t.Fatalf("%s from %s: %d %s; want 403 naming the address and the knob", path, ip, code, body)
		}
	}
	if code, body := testserver.Request(t, "POST", base+"/write", "Authorization", "Bearer "+testToken); code != http.StatusForbidden || !strings.Contains(body, "only over loopback") {
		t.Fatalf("write from %s with the token: %d %s, want 403", ip, code, body)
	}
	p.Set(Rules{AllowRemote: true, Profiles: true, Token: testToken})
	for _, path := range []string{"/read", "/debug/pprof/"} {
		if code, body := testserver.Request(t, "GET", base+path); code != http.StatusOK {
			t.Fatalf("%s from %s with AllowRemote: %d %s", path, ip, code, body)
		}
	}
	if code, body := testserver.Request(t, "POST", base+"/write", "Authorization", "Bearer "+testToken); code != http.StatusOK {
		t.Fatalf("write from %s with AllowRemote and the token: %d %s", ip, code, body)
	}
}

// TestWrite: without a token configured a write is refused saying how to
// configure one and what works without; with one, a missing or wrong
// token gets 401, the right one is answered, and a request that looks
// cross-site is refused even with the token (the curl: Origin
// http://evil.example and Content-Type text/plain).
func TestWrite(t *testing.T) {
	p := New(Rules{}, testKnobs)
	base := serve(t, p, "127.0.0.1:0")
	host := strings.TrimPrefix(base, "http://")
	code, body := testserver.Request(t, "POST", base+"/write")
	if why := refusal(t, body); code != http.StatusForbidden || !strings.Contains(why, "set token_file") ||
		!strings.Contains(why, "Authorization: Bearer TOKEN") || !strings.Contains(why, "SIGHUP does it too") {
		t.Fatalf("no token configured: %d %s; want 403 saying how to configure one and that SIGHUP works", code, body)
	}
	p.Set(Rules{Token: testToken})
	for _, tc := range []struct {
		name    string
		headers []string
		code    int
		says    string
	}{
		{"no token", nil, http.StatusUnauthorized, "the request has none"},
		{"another scheme", []string{"Authorization", "Basic " + testToken}, http.StatusUnauthorized, "the request has none"},
		{"wrong token", []string{"Authorization", "Bearer " + testToken + "x"}, http.StatusUnauthorized, "not the configured one"},
		{"a prefix of the token", []string{"Authorization", "Bearer " + testToken[:8]}, http.StatusUnauthorized, "not the configured one"},
		{"the issue's curl", []string{"Authorization", "Bearer " + testToken, "Origin", "http://evil.example", "Content-Type", "text/plain"}, http.StatusForbidden, `Origin "http://evil.example"`},
		{"the issue's curl, no token", []string{"Origin", "http://evil.example", "Content-Type", "text/plain"}, http.StatusForbidden, "cross-site page"},
		{"Origin null", []string{"Authorization", "Bearer " + testToken, "Origin", "null"}, http.StatusForbidden, `Origin "null"`},
		{"Sec-Fetch-Site cross-site", []string{"Authorization", "Bearer " + testToken, "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, "Sec-Fetch-Site: cross-site"},
		{"form body", []string{"Authorization", "Bearer " + testToken, "Content-Type", "application/x-www-form-urlencoded"}, http.StatusForbidden, "an HTML form can send"},
		{"multipart body", []string{"Authorization", "Bearer " + testToken, "Content-Type", "multipart/form-data; boundary=x"}, http.StatusForbidden, "an HTML form can send"},
		{"text body", []string{"Authorization", "Bearer " + testToken, "Content-Type", "Text/Plain; charset=utf-8"}, http.StatusForbidden, "an HTML form can send"},
		{"foreign Host", []string{"Authorization", "Bearer " + testToken, "Host", "evil.example"}, http.StatusForbidden, "DNS rebinding"},
		{"the token", []string{"Authorization", "Bearer " + testToken}, http.StatusOK, "done"},
		{"the token, JSON", []string{"Authorization", "Bearer " + testToken, "Content-Type", "application/json"}, http.StatusOK, "done"},
		{"the token, same origin", []string{"Authorization", "Bearer " + testToken, "Origin", "http://" + host, "Sec-Fetch-Site", "same-origin"}, http.StatusOK, "done"},
	} {
		code, body := testserver.Request(t, "POST", base+"/write", tc.headers...)
		text := body
		if code != http.StatusOK {
			text = refusal(t, body)
		}
		if code != tc.code || !strings.Contains(text, tc.says) {
			t.Errorf("%s: %d %s; want %d saying %q", tc.name, code, body, tc.code, tc.says)
		}
		if strings.Contains(body, testToken[:8]) {
			t.Errorf("%s: the answer shows the token: %s", tc.name, body)
		}
	}
}

// TestProfiles: off, /debug/pprof/ answers 404 saying how to turn it on;
// on, it answers, and ?seconds= above the bound (or not a number) is 400.
func TestProfiles(t *testing.T) {
	p := New(Rules{}, testKnobs)
	base := serve(t, p, "127.0.0.1:0")
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=2", "/debug/pprof/profile?seconds=1"} {
		if code, body := testserver.Request(t, "GET", base+path); code != http.StatusNotFound || !strings.Contains(refusal(t, body), "start with --pprof") {
			t.Fatalf("%s while off: %d %s; want 404 naming --pprof", path, code, body)
		}
	}
	p.Set(Rules{Profiles: true})
	if code, body := testserver.Request(t, "GET", base+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Fatalf("/debug/pprof/ while on: %d %.200s", code, body)
	}
	for _, q := range []string{"3600", "61", "0", "-1", "1e3", "x"} {
		for _, path := range []string{"/debug/pprof/profile", "/debug/pprof/heap"} {
			code, body := testserver.Request(t, "GET", base+path+"?seconds="+q)
			if code != http.StatusBadRequest || !strings.Contains(refusal(t, body), fmt.Sprintf("from 1 to %d", MaxProfileSeconds)) {
				t.Fatalf("%s?seconds=%s: %d %s; want 400 naming the bound", path, q, code, body)
			}
		}
	}
	if code, body := testserver.Request(t, "GET", base+"/debug/pprof/profile?seconds=1"); code != http.StatusOK || len(body) == 0 {
		t.Fatalf("/debug/pprof/profile?seconds=1: %d, %d bytes", code, len(body))
	}
	if code, body := testserver.Request(t, "GET", base+"/debug/pprof/", "Host", "evil.example"); code != http.StatusForbidden {
		t.Fatalf("/debug/pprof/ with Host evil.example: %d %s, want 403", code, body)
	}
}

// TestRulesRedactToken: Rules print without the token under fmt's verbs.
func TestRulesRedactToken(t *testing.T) {
	r := Rules{Token: testToken}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		if out := fmt.Sprintf(verb, r); strings.Contains(out, testToken) || !strings.Contains(out, "REDACTED") {
			t.Errorf("%s: %s", verb, out)
		}
	}
}
