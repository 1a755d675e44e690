package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// serveAdmin serves p's admin handler on a real listener at addr (an
// ephemeral port of a loopback address, or another local one), as the
// metrics address does, until the test ends; it returns the base URL.
func serveAdmin(t testing.TB, p *Proxy, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p.AdminHandler(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return "http://" + ln.Addr().String()
}

// adminGet fetches url and returns the status and body; v, when not nil,
// receives the JSON body of a 200, which must have no unknown field.
func adminGet(t testing.TB, url string, v any) (int, []byte) {
	t.Helper()
	code, body, h := testserver.Get(t, url)
	if v != nil && code == http.StatusOK {
		if ct := h.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("GET %s: Content-Type %q", url, ct)
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("GET %s: %v in %s", url, err, body)
		}
	}
	return code, body
}

// twoGroupConfig routes mods.example.com to group mods and everything else
// to main, each with one backend.
func twoGroupConfig(main, mods, extra string) string {
	return fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: main
routes: [{hosts: [mods.example.com], group: mods}]
groups:
  main: {backends: [{addr: %q}]}
  mods: {backends: [{addr: %q}]}
%s`, main, mods, extra)
}

// TestAdminSessionsFilters: sessions logged in with several hosts and
// users (one a go-mc bot) are counted and listed by /api/v1/sessions under
// each filter, as their host, user, group and backend.
func TestAdminSessionsFilters(t *testing.T) {
	mainBE, modsBE := startBackend(t, mcbackend.Config{}), startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, twoGroupConfig(mainBE, modsBE, ""))
	base := serveAdmin(t, p, "127.0.0.1:0")
	for _, s := range []struct{ host, user string }{
		{"play.example.com", "Alice"}, {"PLAY.example.com.", "Bob"}, {"mods.example.com", "Carol"}, {"a.b.example.net", "Dave"},
	} {
		login17(t, dial(t, addr), s.host, s.user)
	}
	joinGoMCBot(t, addr, "ProxyBot") // host 127.0.0.1
	waitStats(t, p, "5 routed sessions", func(st proxymetrics.Stats) bool { return st.Routed == 5 })

	for _, tc := range []struct {
		name, query string
		users       []string // listed, in any order
		matched     int
		truncated   bool
		byHost      []admin.HostCount
	}{
		{"all", "", []string{"Alice", "Bob", "Carol", "Dave", "ProxyBot"}, 5, false, []admin.HostCount{
			{Host: "play.example.com", Sessions: 2}, {Host: "127.0.0.1", Sessions: 1}, {Host: "a.b.example.net", Sessions: 1}, {Host: "mods.example.com", Sessions: 1}}},
		{"host exact", "host=play.example.com", []string{"Alice", "Bob"}, 2, false, []admin.HostCount{{Host: "play.example.com", Sessions: 2}}},
		{"host any case, trailing dot", "host=Play.Example.Com.", []string{"Alice", "Bob"}, 2, false, nil},
		{"host wildcard", "host=*.example.com", []string{"Alice", "Bob", "Carol"}, 3, false, nil},
		{"host wildcard any depth", "host=*.example.net", []string{"Dave"}, 1, false, nil},
		{"wildcard is not the domain", "host=*.b.example.net", []string{"Dave"}, 1, false, nil},
		{"bare domain", "host=example.com", nil, 0, false, []admin.HostCount{}},
		{"user any case", "user=alice", []string{"Alice"}, 1, false, nil},
		{"host and user", "host=play.example.com&user=BOB", []string{"Bob"}, 1, false, nil},
		{"host and other user", "host=mods.example.com&user=bob", nil, 0, false, nil},
		{"group", "group=mods", []string{"Carol"}, 1, false, nil},
		{"backend", "backend=" + modsBE, []string{"Carol"}, 1, false, nil},
		{"limit", "limit=2", nil, 5, true, nil},
		{"counts only", "limit=0", nil, 5, true, nil},
		{"go-mc bot", "user=proxybot&host=127.0.0.1", []string{"ProxyBot"}, 1, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got admin.SessionsSummary
			if code, body := adminGet(t, base+"/api/v1/sessions?"+tc.query, &got); code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			if got.Open != 5 || got.Matched != tc.matched || got.Truncated != tc.truncated || got.LoopsUnanswered != 0 {
				t.Fatalf("open %d matched %d truncated %v unanswered %d; want 5, %d, %v, 0", got.Open, got.Matched, got.Truncated,
					got.LoopsUnanswered, tc.matched, tc.truncated)
			}
			var users []string
			for _, s := range got.Sessions {
				users = append(users, s.User)
				wantGroup, wantBE := "main", mainBE
				if s.Host == "mods.example.com" {
					wantGroup, wantBE = "mods", modsBE
				}
				if s.Group != wantGroup || s.Backend != wantBE || s.State != "relay" || s.Mode != config.ModeMinecraft ||
					!strings.HasPrefix(s.Remote, "127.0.0.1:") || !strings.HasPrefix(s.Listener, "127.0.0.1:") ||
					s.Protocol == 0 || time.Since(s.Since) > time.Minute || time.Since(s.Since) < 0 {
					t.Errorf("session %+v", s)
				}
			}
			switch q := tc.query; {
			case strings.Contains(q, "limit=2"):
				if len(users) != 2 {
					t.Fatalf("limit=2 listed %q", users)
				}
			case tc.users == nil:
				if len(users) != 0 {
					t.Fatalf("listed %q, want none", users)
				}
			default:
				slices.Sort(users)
				if !slices.Equal(users, tc.users) {
					t.Fatalf("listed %q, want %q", users, tc.users)
				}
			}
			if tc.byHost != nil && !slices.Equal(got.ByHost, tc.byHost) {
				t.Fatalf("by_host %+v, want %+v", got.ByHost, tc.byHost)
			}
			if n := got.ByState["relay"]; n != tc.matched {
				t.Fatalf("by_state %v, want relay %d", got.ByState, tc.matched)
			}
		})
	}
	var all admin.SessionsSummary
	adminGet(t, base+"/api/v1/sessions", &all)
	want := []admin.BackendCount{{Group: "main", Backend: mainBE, Sessions: 4}, {Group: "mods", Backend: modsBE, Sessions: 1}}
	if !slices.Equal(all.ByBackend, want) {
		t.Fatalf("by_backend %+v, want %+v", all.ByBackend, want)
	}
	for i := 1; i < len(all.Sessions); i++ {
		if all.Sessions[i].Since.Before(all.Sessions[i-1].Since) {
			t.Fatalf("sessions not oldest first: %+v", all.Sessions)
		}
	}
}

// TestAdminRejectionsNewestFirst: refusals appear in /api/v1/rejections
// with their reasons.Reason, client and, once the handshake named it, host and
// user, newest first; ?reason= and ?limit= select among them.
func TestAdminRejectionsNewestFirst(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
routes: [{hosts: [known.example], group: main}]
groups: {main: {backends: [{addr: %q}]}}
limits: {max_sessions_per_ip: 1}
`, be))
	base := serveAdmin(t, p, "127.0.0.1:0")
	held := dial(t, addr)
	login17(t, held, "known.example", "Holder")
	// Over max_sessions_per_ip: refused at accept, before any handshake.
	over := dial(t, addr)
	if _, err := over.Read(make([]byte, 1)); err == nil {
		t.Fatal("a second session from 127.0.0.1 was not refused")
	}
	_ = held.Close()
	waitStats(t, p, "every session to end", func(st proxymetrics.Stats) bool { return st.Active == 0 })
	c := dial(t, addr)
	if _, err := c.Write(append(handshake(764, "Unknown.Example", mc.NextStateLogin), loginStart("Eve")...)); err != nil {
		t.Fatal(err)
	}
	if id, _ := readPacket(t, c); id != mc.PacketLoginDisconnect {
		t.Fatalf("unknown host: packet %#x, want a disconnect", id)
	}
	waitStats(t, p, "the unknown_host refusal", func(st proxymetrics.Stats) bool { return st.Rejected["unknown_host"] == 1 })

	var v admin.RejectionsView
	if code, body := adminGet(t, base+"/api/v1/rejections", &v); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if len(v.Recent) != 2 || v.KeptPerLoop != admin.RecentPerLoop || v.LoopsUnanswered != 0 ||
		v.Totals["unknown_host"] != 1 || v.Totals["max_sessions_per_ip"] != 1 {
		t.Fatalf("rejections %+v", v)
	}
	first, second := v.Recent[0], v.Recent[1]
	if first.Reason != "unknown_host" || first.Host != "unknown.example" || first.User != "" ||
		!strings.HasPrefix(first.Remote, "127.0.0.1:") || time.Since(first.At) > time.Minute {
		t.Fatalf("newest %+v: want unknown_host for unknown.example from 127.0.0.1", first)
	}
	// Unknown hosts are refused at the handshake, before Login Start: no
	// user yet. The accept-time refusal has no host either.
	if second.Reason != "max_sessions_per_ip" || second.Host != "" || !strings.HasPrefix(second.Remote, "127.0.0.1:") || second.At.After(first.At) {
		t.Fatalf("older %+v: want max_sessions_per_ip from 127.0.0.1 before %v", second, first.At)
	}
	adminGet(t, base+"/api/v1/rejections?reason=max_sessions_per_ip", &v)
	if len(v.Recent) != 1 || v.Recent[0].Reason != "max_sessions_per_ip" {
		t.Fatalf("?reason=max_sessions_per_ip: %+v", v.Recent)
	}
	adminGet(t, base+"/api/v1/rejections?limit=1", &v)
	if len(v.Recent) != 1 || v.Recent[0].Reason != "unknown_host" {
		t.Fatalf("?limit=1: %+v", v.Recent)
	}
}

// TestRejectionRingKeepsTheLast: a loop's ring keeps its last
// admin.RecentPerLoop refusals, oldest first, and no legacy pings.
func TestRejectionRingKeepsTheLast(t *testing.T) {
	var ls loopState
	ap := netip.MustParseAddrPort("192.0.2.7:4000")
	for i := range admin.RecentPerLoop + 10 {
		ls.refused(reasons.UnknownHost, ap, fmt.Sprint(i), "", "")
		ls.refused(reasons.LegacyPing, ap, "legacy", "", "")
	}
	got := ls.recent.AppendTo(nil)
	if len(got) != admin.RecentPerLoop || got[0].Host != "10" || got[len(got)-1].Host != fmt.Sprint(admin.RecentPerLoop+9) {
		t.Fatalf("kept %d, from %q to %q; want %d from 10 to %d", len(got), got[0].Host, got[len(got)-1].Host, admin.RecentPerLoop, admin.RecentPerLoop+9)
	}
	if n := ls.counters.rejected[reasons.LegacyPing].Load(); n != admin.RecentPerLoop+10 {
		t.Fatalf("legacy pings counted %d", n)
	}
	var few admin.RefusalRing
	few.Add(admin.Refusal{Host: "a"})
	if got := few.AppendTo(nil); len(got) != 1 || got[0].Host != "a" {
		t.Fatalf("one refusal: %+v", got)
	}
}

// TestAdminDisabledByReload: the admin handler answers while
// admin.enabled is set, and a reload that clears it turns it off (404) at
// once, for any address. Who may ask at all is the metrics address's
// policy (internal/adminaccess), tested there and in cmd/tidegate.
func TestAdminDisabledByReload(t *testing.T) {
	ip := testserver.NonLoopbackIPv4(t)
	be := startBackend(t, mcbackend.Config{})
	p, _ := startProxy(t, mcConfig(be, ""))
	remote := serveAdmin(t, p, net.JoinHostPort(ip, "0"))
	local := serveAdmin(t, p, "127.0.0.1:0")
	for _, path := range []string{"/api/v1/backends", "/api/v1/sessions", "/api/v1/config", "/api/v1/rejections", "/"} {
		for _, base := range []string{local, remote} {
			if code, body := adminGet(t, base+path, nil); code != http.StatusOK {
				t.Fatalf("%s on %s: %d %s", path, base, code, body)
			}
		}
	}
	cfg, err := testParseConfig(t, mcConfig(be, "admin: {enabled: false}"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Loops = 2 // as startProxy runs it
	if err := p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{local, remote} {
		if code, body := adminGet(t, base+"/api/v1/backends", nil); code != http.StatusNotFound || !strings.Contains(string(body), "admin.enabled is false") {
			t.Fatalf("disabled, %s: %d %s", base, code, body)
		}
	}
}

// TestAdminBadRequests: unknown endpoints, parameters, methods and values
// get a JSON error that says what is wrong.
func TestAdminBadRequests(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	p, _ := startProxy(t, mcConfig(be, ""))
	base := serveAdmin(t, p, "127.0.0.1:0")
	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{"/api/v1/nothing", 404, "no endpoint /api/v1/nothing; the admin API has /, /api/v1/backends"},
		{"/api/v1/sessions?hots=a", 400, `unknown parameter "hots": /api/v1/sessions takes host, user, group, backend, limit`},
		{"/api/v1/sessions?limit=-1", 400, `limit "-1": want a number from 0 to 10000`},
		{"/api/v1/sessions?limit=10001", 400, `limit "10001": want a number from 0 to 10000`},
		{"/api/v1/sessions?host=a&host=b", 400, `parameter "host" is given 2 times`},
		{"/api/v1/config?x=1", 400, `unknown parameter "x": /api/v1/config takes none`},
		{"/api/v1/backends?group=nope", 404, `no group "nope"; the groups are main`},
		{"/api/v1/rejections?reason=nope", 400, `reason "nope": want one of max_sessions_per_ip, `},
		{"/api/v1/rejections?limit=129", 400, `limit "129": want a number from 0 to 128`},
		{"/?x=1", 400, `unknown parameter "x": / takes none`},
		{"/api/v1/network/sessions", 404, "no network view: cluster.redis is not configured"},
		{"/api/v1/network/sessions?backend=x", 400, `unknown parameter "backend": /api/v1/network/sessions takes host, user, group, proxy, limit`},
	} {
		code, body := adminGet(t, base+tc.path, nil)
		var e apiError
		if code != tc.code || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, tc.msg) {
			t.Errorf("%s: %d %s; want %d with %q", tc.path, code, body, tc.code, tc.msg)
		}
	}
	resp, err := http.Post(base+"/api/v1/sessions", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestAdminLoopsThatDoNotAnswer: while every event loop is busy (here
// blocked on purpose), a scan returns at its deadline and counts them as
// unanswered instead of waiting; once they run again it sees everything.
func TestAdminLoopsThatDoNotAnswer(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, mcConfig(be, ""))
	login17(t, dial(t, addr), "a.example", "Alice")
	loops := p.Reactor().Loops()
	release := make(chan struct{})
	for _, l := range loops {
		if err := l.Execute(func() { <-release }); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	got := p.Sessions(ctx, admin.SessionFilter{Limit: 10})
	rs, missing := p.RecentRejections(ctx, 10)
	close(release)
	if took := time.Since(start); got.LoopsUnanswered != len(loops) || got.Open != 0 || missing != len(loops) || len(rs) != 0 || took > 2*time.Second {
		t.Fatalf("blocked loops: %+v, rejections %v unanswered %d, after %v (%d loops)", got, rs, missing, took, len(loops))
	}
	got = p.Sessions(context.Background(), admin.SessionFilter{Limit: 10})
	if got.LoopsUnanswered != 0 || got.Open != 1 || len(got.Sessions) != 1 || got.Sessions[0].User != "Alice" {
		t.Fatalf("scan after: %+v", got)
	}
}

// TestAdminStatusPageEscapes: what clients send (a virtual host) reaches
// the page escaped.
func TestAdminStatusPageEscapes(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, mcConfig(be, ""))
	base := serveAdmin(t, p, "127.0.0.1:0")
	login17(t, dial(t, addr), `<b onmouseover="x">bold</b>`, "Mallory")
	code, body := adminGet(t, base+"/", nil)
	page := string(body)
	if code != http.StatusOK || strings.Contains(page, "<b onmouseover") || !strings.Contains(page, "&lt;b onmouseover=&#34;x&#34;&gt;bold&lt;/b&gt;") {
		t.Fatalf("%d: the host is not escaped:\n%s", code, page)
	}
}

// TestAdminConfigNamesEveryKey: /api/v1/config has every key of the
// configuration, by its YAML name, and durations as text.
func TestAdminConfigNamesEveryKey(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	p, _ := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0", proxy_protocol: {accept: v2, trusted: [10.0.0.0/8]}}]
default_group: main
routes: [{hosts: [mods.example.com], group: mods}]
groups:
  main: {backends: [{addr: %q}]}
  mods: {backends: [{addr: %q}]}
`, be, be))
	base := serveAdmin(t, p, "127.0.0.1:0")
	var v struct {
		ConfigHash string         `json:"config_hash"`
		Config     map[string]any `json:"config"`
		Redacted   []string       `json:"redacted"`
	}
	if code, body := adminGet(t, base+"/api/v1/config", &v); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if v.ConfigHash != p.ConfigHash() || v.Redacted == nil || len(v.Redacted) != 0 {
		t.Fatalf("hash %q (want %q), redacted %q", v.ConfigHash, p.ConfigHash(), v.Redacted)
	}
	data, _ := json.Marshal(v.Config)
	text := string(data)
	for _, want := range []string{`"handshake_timeout":"5s"`, `"idle_timeout":"10m0s"`, `"trusted":["10.0.0.0/8"]`,
		`"admin":{"allow_remote":false,"allowed_hosts":[],"enabled":true,"token_file":""}`, `"mods":{"backends":[{"addr":"` + be + `","weight":1}]`} {
		if !strings.Contains(text, want) {
			t.Errorf("config lacks %s:\n%s", want, text)
		}
	}
	// Every key of every part: the endpoint serves the configuration's
	// View, which config's TestViewNamesEveryKey checks names them all.
	view, err := p.cur().cfg.View()
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(view.Config, &want); err != nil {
		t.Fatal(err)
	}
	if wantText, _ := json.Marshal(want); string(wantText) != text {
		t.Errorf("/api/v1/config is not the configuration's View:\n%s\nwant\n%s", text, wantText)
	}
}

// apiError is the body of the admin API's refusals and failures.
type apiError struct {
	Error string `json:"error"`
}
