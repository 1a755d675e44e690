package proxy

import (
	"fmt"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/testredis"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// TestClusterRecordsTheCurrentServer: with several proxies, a player's
// record in Redis names the group a move took it to, after the next
// heartbeat.
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
	waitfor.Value(t, "the record at a", current, func(s string) bool { return s == "a" })
	for _, to := range []string{"b", "a"} {
		if r := send(t, p, "Tracked", to); !r.Moved {
			t.Fatalf("move to %s: %+v", to, r)
		}
		waitfor.Value(t, "the record at "+to, current, func(s string) bool { return s == to })
	}
}
