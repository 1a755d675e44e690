package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/testredis"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/admin"
)

// TestClusterRecordsTheCurrentServer: with several proxies, a player's
// record in Redis names the group a move took it to, after the next
// heartbeat, and GET /api/v1/network/sessions lists it there.
func TestClusterRecordsTheCurrentServer(t *testing.T) {
	checkNoLeaks(t)
	rs := testredis.Start(t)
	_, _, a, b := startMoveBackends(t, mcbackend.ForwardNone, false)
	p, addr := startProxy(t, moveConfig(t, a, b, "none", "")+fmt.Sprintf(
		"cluster: {redis: %q, id: proxy-0, heartbeat: 200ms, timeout: 3s, login_wait: 10s, status_sample: 5}\n", rs.URL()))
	gomcbot.Join(t, addr, "Tracked", 60*time.Second)
	current := func() string {
		n, ok := p.Cluster().Network()
		if !ok || len(n.Sample) != 1 {
			return ""
		}
		return n.Sample[0].Backend
	}
	api := httptest.NewServer(p.AdminHandler())
	defer api.Close()
	listed := func() string {
		resp, err := http.Get(api.URL + "/api/v1/network/sessions?user=tracked")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v admin.NetworkSessionsView
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/v1/network/sessions: %s, %v", resp.Status, err)
		}
		if v.Proxies != 1 || v.Matched != 1 || len(v.Sessions) != 1 || v.Sessions[0].Proxy != "proxy-0" || v.Sessions[0].User != "Tracked" {
			return fmt.Sprintf("%+v", v)
		}
		return v.Sessions[0].Group
	}
	waitfor.Value(t, "the record at a", current, func(s string) bool { return s == "a" })
	waitfor.Value(t, "the network listing at a", listed, func(s string) bool { return s == "a" })
	for _, to := range []string{"b", "a"} {
		if r := send(t, p, "Tracked", to); !r.Moved {
			t.Fatalf("move to %s: %+v", to, r)
		}
		waitfor.Value(t, "the record at "+to, current, func(s string) bool { return s == to })
		waitfor.Value(t, "the network listing at "+to, listed, func(s string) bool { return s == to })
	}
}

// TestNetworkSessionsWhileRedisIsDown: with Redis unreachable the network
// listing answers 503 and says why, and the proxy's own listing still
// answers.
func TestNetworkSessionsWhileRedisIsDown(t *testing.T) {
	checkNoLeaks(t)
	be := startBackend(t, mcbackend.Config{})
	p, _ := startProxy(t, mcConfig(be, fmt.Sprintf(
		"cluster: {redis: \"redis://%s\", id: proxy-0, heartbeat: 200ms, timeout: 300ms, login_wait: 1s}", refusedAddr(t))))
	base := serveAdmin(t, p, "127.0.0.1:0")
	for _, path := range []string{"/api/v1/network/sessions", "/api/v1/network/sessions?user=steve"} {
		code, body := adminGet(t, base+path, nil)
		var e apiError
		if code != http.StatusServiceUnavailable || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, "GET /api/v1/network/sessions: cluster:") {
			t.Errorf("%s: %d %s, want 503 saying why", path, code, body)
		}
	}
	if code, _ := adminGet(t, base+"/api/v1/sessions", nil); code != http.StatusOK {
		t.Errorf("/api/v1/sessions while Redis is down: %d", code)
	}
}

// TestStatusPageShowsTheNetwork: with several proxies the status page
// shows the network's players by proxy and server; without Redis it says
// why they are missing, and still renders.
func TestStatusPageShowsTheNetwork(t *testing.T) {
	checkNoLeaks(t)
	rs, _, ps, addrs := startCluster(t, 2, "")
	rawLogin(t, addrs[0], "Alice")
	rawLogin(t, addrs[0], "Bob")
	rawLogin(t, addrs[1], "Carol")
	waitForNetwork(t, 3, ps...)
	base := serveAdmin(t, ps[1], "127.0.0.1:0")
	code, body := adminGet(t, base+"/", nil)
	page := string(body)
	if code != http.StatusOK || !strings.Contains(page, `<h2 id="network">Network</h2>`) || !strings.Contains(page, "3 players on 2 live proxies") {
		t.Fatalf("GET /: %d\n%s", code, page)
	}
	for _, row := range []string{
		`<tr><td>proxy-0</td><td>main</td><td class="n">2</td></tr>`,
		`<tr><td>proxy-1</td><td>main</td><td class="n">1</td></tr>`,
	} {
		if !strings.Contains(page, row) {
			t.Errorf("the status page has no row %s:\n%s", row, page)
		}
	}
	rs.Kill()
	waitfor.For(t, "the page to say the network is missing", func() bool {
		code, body := adminGet(t, base+"/", nil)
		return code == http.StatusOK && strings.Contains(string(body), "could not be read from Redis")
	})
}
