package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/testredis"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/session/cluster/clusterconf"
)

// TestRedisClusterOperations: on a Redis Cluster of three masters with a
// replica each, every operation of the client works (the scripts' keys are
// in one hash slot): logins with the network-wide limits, duplicates across
// proxies, kick_old over pub/sub, releases, the heartbeat's network view, a
// clean stop; then the master of that slot is killed and the client goes
// on against the replica the cluster promotes, its sessions all there.
func TestRedisClusterOperations(t *testing.T) {
	rc := testredis.StartCluster(t, 3, 1)
	r := clusterconf.Redis{Addrs: rc.Addrs()[:2], Cluster: true} // the rest are discovered
	a := newTopologyClient(t, r, "proxy-a")
	b := newTopologyClient(t, r, "proxy-b")
	if a.prefix != prefixCluster {
		t.Fatalf("prefix %q on Redis Cluster", a.prefix)
	}
	ta, ans := login(t, a, "Steve", "0123456789abcdef0123456789abcdef")
	if ans.Verdict != Accepted {
		t.Fatalf("first login: %v (fallbacks %v)", ans.Verdict, a.Fallbacks())
	}
	if _, ans := login(t, b, "steve", ""); ans.Verdict != Duplicate || ans.Owner != "proxy-a/"+ta.Token() {
		t.Fatalf("same name on the other proxy: %+v", ans)
	}
	if _, ans := login(t, b, "Alex", "0123456789ABCDEF0123456789ABCDEF"); ans.Verdict != Duplicate {
		t.Fatalf("same UUID on the other proxy: %+v", ans)
	}
	waitfor.For(t, "network count 1 and 2 proxies", func() bool { n, ok := b.Network(); return ok && n.Online == 1 && n.Proxies == 2 })
	a.Release(ta)
	waitfor.For(t, "the name free after the release", func() bool {
		tk, ans := login(t, b, "steve", "")
		if tk != nil {
			b.Release(tk)
		}
		return ans.Verdict == Accepted
	})

	ask := func(c *Client, name string, lim Limits, subnet string) Verdict {
		ch := make(chan Answer, 1)
		_, ans, wait := c.Login(Session{Name: name, Subnet: subnet}, lim, name, func(a Answer) { ch <- a })
		if wait {
			ans = <-ch
		}
		return ans.Verdict
	}
	rate := Limits{RateKey: "192.0.2.1", RateInterval: time.Hour, RateTolerance: time.Hour}
	for i, want := range []Verdict{Accepted, Accepted, LoginRate} {
		if got := ask([]*Client{a, b}[i%2], fmt.Sprintf("r%d", i), rate, ""); got != want {
			t.Fatalf("rate login %d: %v, want %v", i, got, want)
		}
	}
	for i, want := range []Verdict{Accepted, Accepted, SubnetCap} {
		if got := ask([]*Client{a, b}[i%2], fmt.Sprintf("s%d", i), Limits{SubnetCap: 2}, "198.51.100.0/24"); got != want {
			t.Fatalf("subnet login %d: %v, want %v", i, got, want)
		}
	}

	kicked := make(chan any, 1)
	ka := newTopologyClient(t, r, "proxy-k")
	ka.cfg.OnKick = func(h any) { kicked <- h }
	kb := newTopologyClient(t, r, "proxy-j")
	kb.cfg.Mode = KickOld
	login(t, ka, "Notch", "")
	if _, ans := login(t, kb, "notch", ""); ans.Verdict != Accepted {
		t.Fatalf("kick_old login: %+v", ans)
	}
	select {
	case h := <-kicked:
		if h != "Notch" {
			t.Fatalf("kicked %v", h)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the older session was not kicked within 10s")
	}

	// The master of the slot every key is in dies; its replica takes over.
	slotMaster := rc.MasterOf(prefixCluster)
	if _, err := testredis.Command(slotMaster, "EXISTS", prefixCluster+"sessions:proxy-a"); err != nil {
		t.Fatalf("the keys are not at %s, the master of their slot: %v", slotMaster, err)
	}
	rc.Node(slotMaster).Kill()
	waitfor.For(t, "another master for the slot", func() bool { m := rc.MasterOf(prefixCluster); return m != "" && m != slotMaster })
	waitfor.For(t, "a login accepted after the failover", func() bool {
		tk, ans := login(t, a, "late", "")
		if tk != nil && ans.Verdict != Accepted {
			a.Release(tk)
		}
		return ans.Verdict == Accepted
	})
	waitfor.Check(t, "Redis to hold exactly proxy-a's sessions", func() error { return published(a, rc.MasterOf(prefixCluster)) })
	t.Logf("proxy-a after the failover: fallbacks %v, lost writes seen %d, conflicts %d", a.Fallbacks(), a.LostWrites(), a.Conflicts())
}
