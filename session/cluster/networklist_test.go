package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/testredis"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/session/cluster/clusterconf"
)

// TestNetworkSessionsListsEveryLiveProxy: two proxies' players, one of them
// moved, are listed from either proxy with the server each is on, and the
// filter and the limit apply.
func TestNetworkSessionsListsEveryLiveProxy(t *testing.T) {
	rs := testredis.Start(t)
	a := testClient(t, rs.URL(), "proxy-a", Refuse, nil)
	b := testClient(t, rs.URL(), "proxy-b", Refuse, nil)
	mover, _ := login(t, a, "Mover", "")
	login(t, a, "Steve", "")
	login(t, b, "alex", "")
	a.Moved(mover, "lobby")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list := func(c *Client, match func(Listed) bool, limit int) NetworkList {
		t.Helper()
		l, err := c.NetworkSessions(ctx, match, limit)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	waitfor.Check(t, "the moved player listed on lobby", func() error {
		l := list(b, func(l Listed) bool { return l.Name == "Mover" }, 1)
		if len(l.Sessions) != 1 || l.Sessions[0].Backend != "lobby" {
			return fmt.Errorf("Mover: %+v", l)
		}
		return nil
	})
	for _, c := range []*Client{a, b} {
		l := list(c, nil, 10)
		var got []string
		for _, s := range l.Sessions {
			got = append(got, s.Proxy+"/"+s.Name+"@"+s.Backend)
		}
		if want := "[proxy-a/Mover@lobby proxy-a/Steve@main proxy-b/alex@main]"; fmt.Sprint(got) != want {
			t.Errorf("from %s: %v, want %s", c.ID(), got, want)
		}
		if l.Proxies != 2 || l.Scanned != 3 || l.Unreadable != 0 || l.Matched != 3 || l.Truncated {
			t.Errorf("from %s: %d proxies, %d scanned, %d unreadable, %d matched, truncated %v; want 2, 3, 0, 3, false",
				c.ID(), l.Proxies, l.Scanned, l.Unreadable, l.Matched, l.Truncated)
		}
	}
	if l := list(a, func(l Listed) bool { return l.Backend == "main" }, 1); l.Matched != 2 || len(l.Sessions) != 1 || l.Sessions[0].Name != "Steve" {
		t.Errorf("group main, limit 1: %+v", l)
	}
	var none *Client
	if _, err := none.NetworkSessions(ctx, nil, 1); !errors.Is(err, ErrNoCluster) {
		t.Errorf("a nil client: %v, want ErrNoCluster", err)
	}
}

// TestNetworkSessionsSkipsExpiredProxies: with no heartbeat to sweep them
// (the client is not started), a proxy whose heartbeat expired is left out
// though its sessions are still in Redis, and a record that does not parse
// is counted and skipped.
func TestNetworkSessionsSkipsExpiredProxies(t *testing.T) {
	rs := testredis.Start(t)
	rec := func(name string) string {
		return Session{Name: name, Host: "play.example", Backend: "main", Since: time.Unix(1700000000, 0)}.Record()
	}
	for _, cmd := range [][]string{
		{"ZADD", "tidegate:proxies", "1", "proxy-dead"}, // expired in 1970
		{"HSET", "tidegate:sessions:proxy-dead", "dead.1", rec("Ghost")},
		{"ZADD", "tidegate:proxies", "99999999999999", "proxy-x"},
		{"HSET", "tidegate:sessions:proxy-x", "x.1", "not a record", "x.2", rec("Alive")},
	} {
		if _, err := testredis.Command(rs.Addr(), cmd...); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(testConfig(t, clusterconf.Redis{URL: rs.URL()}, "lister", Refuse, func(any) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := c.NetworkSessions(ctx, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if l.Proxies != 1 || l.Scanned != 2 || l.Unreadable != 1 || l.Matched != 1 || len(l.Sessions) != 1 ||
		l.Sessions[0].Proxy != "proxy-x" || l.Sessions[0].Name != "Alive" {
		t.Fatalf("%+v: want proxy-x's one readable session only", l)
	}
}
