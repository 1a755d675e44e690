package cluster

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
	"github.com/tidegate/tidegate/internal/testkit/testredis"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/session/cluster/clusterconf"
)

func TestMain(m *testing.M) { os.Exit(leaktest.Main(m)) }

// testClient starts a client of the Redis at url as proxy id; it is stopped
// when the test ends unless the test stops it first.
func testClient(t *testing.T, url, id string, mode Mode, kicked func(any)) *Client {
	t.Helper()
	return startTestClient(t, url, id, mode, kicked, true)
}

// startTestClient is testClient, reset saying whether the client removes
// what Redis holds under id first (a live upgrade's new process does not).
func startTestClient(t *testing.T, url, id string, mode Mode, kicked func(any), reset bool) *Client {
	t.Helper()
	if kicked == nil {
		kicked = func(any) {}
	}
	return startClient(t, testConfig(t, clusterconf.Redis{URL: url}, id, mode, kicked), reset)
}

// testConfig is the configuration of the tests' clients of r: a 200 ms
// heartbeat, short timeouts, warnings logged to the test.
func testConfig(t *testing.T, r clusterconf.Redis, id string, mode Mode, kicked func(any)) Config {
	return Config{Redis: r, ID: id, Heartbeat: 200 * time.Millisecond, Timeout: 2 * time.Second, LoginWait: 5 * time.Second,
		Mode: mode, Sample: 12, Workers: 2, Queue: 64, Failures: 2, Retry: 100 * time.Millisecond,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), OnKick: kicked}
}

// startClient starts a client of cfg (reset: see Client.Start), stopped
// when the test ends.
func startClient(t *testing.T, cfg Config, reset bool) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := cfg.ID
	c.Start(reset)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Errorf("stopping %s: %v", id, err)
		}
	})
	return c
}

// login logs name in through c and waits for the answer.
func login(t *testing.T, c *Client, name, uuid string) (*Ticket, Answer) {
	t.Helper()
	ch := make(chan Answer, 1)
	tk, a, wait := c.Login(Session{Name: name, UUID: uuid, Host: "play.example", Backend: "main", Since: time.Now()}, Limits{}, name,
		func(a Answer) { ch <- a })
	if wait {
		select {
		case a = <-ch:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no answer to a login within 20s", name)
		}
	}
	if a.Verdict != Accepted && a.Verdict != Local {
		tk = nil
	}
	return tk, a
}

func online(c *Client) int {
	n, ok := c.Network()
	if !ok {
		return -1
	}
	return n.Online
}

func TestDuplicateLoginAcrossProxies(t *testing.T) {
	rs := testredis.Start(t)
	a := testClient(t, rs.URL(), "proxy-a", Refuse, nil)
	b := testClient(t, rs.URL(), "proxy-b", Refuse, nil)
	ta, ans := login(t, a, "Steve", "0123456789abcdef0123456789abcdef")
	if ans.Verdict != Accepted {
		t.Fatalf("first login: %v", ans.Verdict)
	}
	if _, ans := login(t, b, "STEVE", ""); ans.Verdict != Duplicate || ans.Owner != "proxy-a/"+ta.Token() {
		t.Fatalf("same name, other case, other proxy: %+v", ans)
	}
	if _, ans := login(t, b, "Alex", "0123456789ABCDEF0123456789ABCDEF"); ans.Verdict != Duplicate {
		t.Fatalf("same UUID, other name: %+v", ans)
	}
	if _, ans := login(t, a, "steve", ""); ans.Verdict != Duplicate {
		t.Fatalf("same name, same proxy: %+v", ans)
	}
	waitfor.For(t, "network count 1 on both", func() bool { return online(a) == 1 && online(b) == 1 })
	if n, _ := b.Network(); len(n.Sample) != 1 || n.Sample[0].Name != "Steve" || n.Proxies != 2 {
		t.Fatalf("network %+v", n)
	}
	a.Release(ta)
	waitfor.For(t, "a login after the release", func() bool {
		tk, ans := login(t, b, "steve", "")
		if tk != nil {
			b.Release(tk)
		}
		return ans.Verdict == Accepted
	})
}

// TestDuplicateLoginRace: logins of one name race on three proxies; exactly
// one wins, each round.
func TestDuplicateLoginRace(t *testing.T) {
	rs := testredis.Start(t)
	cs := []*Client{
		testClient(t, rs.URL(), "proxy-a", Refuse, nil),
		testClient(t, rs.URL(), "proxy-b", Refuse, nil),
		testClient(t, rs.URL(), "proxy-c", Refuse, nil),
	}
	for round := range 20 {
		name := fmt.Sprintf("racer%d", round)
		var wg sync.WaitGroup
		var accepted atomic.Int32
		var winners sync.Map
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := cs[i%len(cs)]
				tk, ans := login(t, c, name, "")
				switch ans.Verdict {
				case Accepted:
					accepted.Add(1)
					winners.Store(c, tk)
				case Duplicate:
				default:
					t.Errorf("%s on %s: %v", name, c.ID(), ans.Verdict)
				}
			}()
		}
		wg.Wait()
		if n := accepted.Load(); n != 1 {
			t.Fatalf("%s: %d logins accepted, want 1", name, n)
		}
	}
}

func TestKickOldAcrossProxies(t *testing.T) {
	rs := testredis.Start(t)
	kicked := make(chan any, 4)
	a := testClient(t, rs.URL(), "proxy-a", KickOld, func(h any) { kicked <- h })
	b := testClient(t, rs.URL(), "proxy-b", KickOld, nil)
	ta, _ := login(t, a, "Steve", "")
	tb, ans := login(t, b, "steve", "")
	if ans.Verdict != Accepted || ans.Owner != "proxy-a/"+ta.Token() {
		t.Fatalf("second login with kick_old: %+v", ans)
	}
	select {
	case h := <-kicked:
		if h != "Steve" {
			t.Fatalf("kicked %v", h)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the old session was not kicked within 20s")
	}
	a.Release(ta) // the old session ends: the new one keeps the name
	waitfor.For(t, "one session in the network", func() bool { return online(b) == 1 })
	if _, ans := login(t, a, "STEVE", ""); ans.Verdict != Accepted || ans.Owner != "proxy-b/"+tb.Token() {
		t.Fatalf("third login: %+v", ans)
	}
}

// TestDeadProxyExpires: a proxy that stops heartbeating without cleaning
// up drops out of the network within the TTL, and its names are free.
func TestDeadProxyExpires(t *testing.T) {
	rs := testredis.Start(t)
	a := testClient(t, rs.URL(), "proxy-a", Refuse, nil)
	b := testClient(t, rs.URL(), "proxy-b", Refuse, nil)
	login(t, a, "Steve", "")
	login(t, a, "Alex", "")
	waitfor.For(t, "network count 2", func() bool { return online(b) == 2 })
	a.KeepKeysOnStop(true) // as if killed: nothing is removed
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ans := login(t, b, "steve", ""); ans.Verdict != Duplicate {
		t.Fatalf("login right after the proxy died: %v", ans.Verdict)
	}
	start := time.Now()
	waitfor.For(t, "network count 0", func() bool { return online(b) == 0 })
	waitfor.For(t, "the name free", func() bool { _, ans := login(t, b, "steve", ""); return ans.Verdict == Accepted })
	if d := time.Since(start); d > 10*a.TTL() {
		t.Errorf("took %v, TTL %v", d, a.TTL())
	}
}

// TestRedisRestartRepublishes: logins go on while Redis is down (decided
// locally, counted), and the sessions are published again once it is back.
func TestRedisRestartRepublishes(t *testing.T) {
	rs := testredis.Start(t)
	a := testClient(t, rs.URL(), "proxy-a", Refuse, nil)
	b := testClient(t, rs.URL(), "proxy-b", Refuse, nil)
	if _, ans := login(t, a, "Steve", ""); ans.Verdict != Accepted {
		t.Fatalf("login: %v", ans.Verdict)
	}
	waitfor.Check(t, "network count 1", func() error {
		if n, ok := b.Network(); !ok || n.Online != 1 {
			return fmt.Errorf("network %+v (known %v), fallbacks %v", n, ok, b.Fallbacks())
		}
		return nil
	})
	rs.Kill()
	waitfor.For(t, "both breakers open", func() bool { return !a.Up() && !b.Up() })
	if _, ans := login(t, a, "Alex", ""); ans.Verdict != Local {
		t.Fatalf("login with Redis down: %v", ans.Verdict)
	}
	if _, ans := login(t, a, "alex", ""); ans.Verdict != Duplicate {
		t.Fatalf("local duplicate with Redis down: %v", ans.Verdict)
	}
	if n := a.Fallbacks()[OpLogin]; n < 1 {
		t.Fatalf("login fallbacks %d", n)
	}
	rs.Restart()
	waitfor.For(t, "both up and 2 sessions republished", func() bool { return a.Up() && b.Up() && online(b) == 2 })
	if _, ans := login(t, b, "ALEX", ""); ans.Verdict != Duplicate {
		t.Fatalf("a session let in while Redis was down, after it is back: %v", ans.Verdict)
	}
}

// TestNetworkLimits: the login rate of an address and the session cap of a
// subnet hold across proxies.
func TestNetworkLimits(t *testing.T) {
	rs := testredis.Start(t)
	a := testClient(t, rs.URL(), "proxy-a", Refuse, nil)
	b := testClient(t, rs.URL(), "proxy-b", Refuse, nil)
	waitfor.For(t, "both proxies live", func() bool { n, ok := a.Network(); return ok && n.Proxies == 2 })
	ask := func(c *Client, name string, lim Limits, subnet string) Verdict {
		ch := make(chan Answer, 1)
		_, ans, wait := c.Login(Session{Name: name, Subnet: subnet}, lim, name, func(a Answer) { ch <- a })
		if wait {
			ans = <-ch
		}
		return ans.Verdict
	}
	rate := Limits{RateKey: "192.0.2.1", RateInterval: time.Hour, RateTolerance: time.Hour} // a burst of 2
	for i, want := range []Verdict{Accepted, Accepted, LoginRate, LoginRate} {
		c := []*Client{a, b}[i%2]
		if got := ask(c, fmt.Sprintf("r%d", i), rate, ""); got != want {
			t.Fatalf("login %d on %s: %v, want %v", i, c.ID(), got, want)
		}
	}
	cap2 := Limits{SubnetCap: 2}
	for i, want := range []Verdict{Accepted, Accepted, SubnetCap} {
		c := []*Client{a, b}[i%2]
		if got := ask(c, fmt.Sprintf("s%d", i), cap2, "198.51.100.0/24"); got != want {
			t.Fatalf("subnet login %d on %s: %v, want %v", i, c.ID(), got, want)
		}
	}
	if got := ask(b, "other", cap2, "203.0.113.0/24"); got != Accepted {
		t.Fatalf("another subnet: %v", got)
	}
}

// TestHandedOffLeavesTheRegistryNotTheNetwork: the old process of a live
// upgrade lets a session's ticket go once the new one adopted it. Its
// player, once that session ended in the new process, logs in again
// through the old one (it was refused there as a duplicate while the old
// registry kept the ticket); and when the new process went away with the
// session, releasing the ticket still takes it out of the network.
func TestHandedOffLeavesTheRegistryNotTheNetwork(t *testing.T) {
	rs := testredis.Start(t)
	old := testClient(t, rs.URL(), "proxy-a", Refuse, nil)
	tk, ans := login(t, old, "Steve", "")
	if ans.Verdict != Accepted {
		t.Fatalf("login: %v", ans.Verdict)
	}
	taker := startTestClient(t, rs.URL(), "proxy-a", Refuse, nil, false)
	adopted := taker.Adopt(tk.Token(), tk.Session(), nil)
	old.HandedOff(tk)
	if n := old.Sessions(); n != 0 {
		t.Fatalf("the old registry holds %d sessions after the hand-off, want 0", n)
	}
	waitfor.For(t, "the network to count the adopted session", func() bool { return online(old) == 1 })
	taker.Release(adopted) // the session ended in the new process
	waitfor.For(t, "the network to be empty", func() bool { return online(old) == 0 && online(taker) == 0 })
	again, ans := login(t, old, "steve", "")
	if ans.Verdict != Accepted {
		t.Fatalf("the player's login through the old process after its session ended in the new one: %v, want accepted", ans.Verdict)
	}
	old.Release(again)

	// The new process went away with a session: the old one releases it.
	lost, ans := login(t, old, "Alex", "")
	if ans.Verdict != Accepted {
		t.Fatalf("login: %v", ans.Verdict)
	}
	old.HandedOff(lost)
	waitfor.For(t, "the network to count the session sent", func() bool { return online(old) == 1 })
	old.Release(lost)
	waitfor.For(t, "the lost session to leave the network", func() bool { return online(old) == 0 })
}
