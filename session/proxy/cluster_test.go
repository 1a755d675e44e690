package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/testredis"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// clusterYAML is a proxy of the network on the Redis at url, named id, with
// a short heartbeat (200 ms: a TTL of 600 ms) and generous waits for a
// loaded machine.
func clusterYAML(be, url, id, extra string) string {
	return mcConfig(be, fmt.Sprintf(`
status: {cache_ttl: 50ms}
limits: {handshake_timeout: 20s}
cluster: {redis: %q, id: %s, heartbeat: 200ms, timeout: 3s, login_wait: 10s, failures: 2, retry: 100ms,
  status_online: true, status_sample: 5%s}
`, url, id, extra))
}

// startCluster starts a Redis, a backend and n proxies named proxy-0...
func startCluster(t *testing.T, n int, extra string) (*testredis.Server, string, []*Proxy, []string) {
	t.Helper()
	rs := testredis.Start(t)
	be := startBackend(t, mcbackend.Config{})
	var ps []*Proxy
	var addrs []string
	for i := range n {
		p, addr := startProxy(t, clusterYAML(be, rs.URL(), fmt.Sprintf("proxy-%d", i), extra))
		ps = append(ps, p)
		addrs = append(addrs, addr)
	}
	return rs, be, ps, addrs
}

// pingPlayers pings addr and returns players.online and the sample's names.
func pingPlayers(t *testing.T, addr string) (int, []string) {
	t.Helper()
	data, _, err := bot.PingAndListTimeout(addr, 10*time.Second)
	if err != nil {
		t.Fatalf("ping %s: %v", addr, err)
	}
	var st struct {
		Players struct {
			Online int
			Sample []struct{ Name, ID string }
		}
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("status %s: %v", data, err)
	}
	var names []string
	for _, s := range st.Players.Sample {
		names = append(names, s.Name)
	}
	return st.Players.Online, names
}

// waitForNetwork waits until each proxy's cluster client reads n sessions
// in the network.
func waitForNetwork(t *testing.T, n int, ps ...*Proxy) {
	t.Helper()
	for _, p := range ps {
		waitfor.Within(t, 30*time.Second, fmt.Sprintf("%s to read %d sessions in the network", p.Cluster().ID(), n), func() error {
			if net, ok := p.Cluster().Network(); !ok || net.Online != n {
				return fmt.Errorf("network sessions %d (known %v)", net.Online, ok)
			}
			return nil
		})
	}
}

// rawLogin logs name in at addr with protocol 5 and reports whether it got
// Login Success (the connection then stays open until the test ends) or
// the text of a login disconnect.
func rawLogin(t *testing.T, addr, name string) (net.Conn, bool, string) {
	t.Helper()
	c := dial(t, addr)
	if _, err := c.Write(append(handshake(mc.Protocol1_7_10, "play.example", mc.NextStateLogin), loginStart(name)...)); err != nil {
		t.Fatal(err)
	}
	id, data := readPacket(t, c)
	switch id {
	case mc.PacketLoginSuccess:
		return c, true, ""
	case mc.PacketLoginDisconnect:
		return c, false, string(data)
	}
	t.Fatalf("%s: packet 0x%02x after Login Start", name, id)
	return nil, false, ""
}

// TestClusterNetworkCount: bots logged in on two of three proxies are
// counted, and named, in the status answers of each.
func TestClusterNetworkCount(t *testing.T) {
	_, _, ps, addrs := startCluster(t, 3, "")
	joinGoMCBot(t, addrs[0], "Alice")
	joinGoMCBot(t, addrs[0], "Bob")
	joinGoMCBot(t, addrs[1], "Carol")
	waitForNetwork(t, 3, ps...)
	for _, addr := range addrs {
		waitfor.For(t, fmt.Sprintf("3 players online at %s", addr), func() bool {
			online, names := pingPlayers(t, addr)
			return online == 3 && len(names) == 3
		})
	}
	_, names := pingPlayers(t, addrs[2])
	if got := strings.Join(sortedCopy(names), ","); got != "Alice,Bob,Carol" {
		t.Fatalf("sample %s", got)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestClusterDuplicateLogin: a second login of a name, on another proxy or
// the same one, in any case, is refused with a login disconnect; once the
// first session ends the name can log in anywhere.
func TestClusterDuplicateLogin(t *testing.T) {
	_, _, ps, addrs := startCluster(t, 2, "")
	steve := joinGoMCBot(t, addrs[0], "Steve")
	waitForNetwork(t, 1, ps...)
	for _, addr := range addrs {
		client := bot.NewClient()
		client.Auth.Name = "sTEVE"
		err := client.JoinServerWithOptions(addr, bot.JoinOptions{MCDialer: gomcbot.Dialer{D: 10 * time.Second}})
		var de bot.DisconnectErr
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "already logged in to this network") {
			t.Fatalf("second login at %s: %v", addr, err)
		}
	}
	if r := ps[1].Stats().Rejected["duplicate_login"]; r != 1 {
		t.Fatalf("proxy-1 refused %d duplicate logins, want 1", r)
	}
	_ = steve.Client.Close()
	waitForNetwork(t, 0, ps...)
	joinGoMCBot(t, addrs[1], "steve")
}

// TestClusterDuplicateLoginRace: logins of one name race on two proxies,
// eight at once, in ten rounds: exactly one is let in each round.
func TestClusterDuplicateLoginRace(t *testing.T) {
	_, _, _, addrs := startCluster(t, 2, "")
	for round := range 10 {
		name := fmt.Sprintf("racer%d", round)
		var wg sync.WaitGroup
		var mu sync.Mutex
		accepted, refused := 0, 0
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, ok, text := rawLogin(t, addrs[i%2], name)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case ok:
					accepted++
				case strings.Contains(text, "already logged in"):
					refused++
				default:
					t.Errorf("%s: disconnect %s", name, text)
				}
			}()
		}
		wg.Wait()
		if accepted != 1 || refused != 7 {
			t.Fatalf("%s: %d accepted, %d refused; want 1 and 7", name, accepted, refused)
		}
	}
}

// TestClusterKickOld: with duplicate_login: kick_old the newer login wins
// and the older session, on another proxy, is closed.
func TestClusterKickOld(t *testing.T) {
	_, _, ps, addrs := startCluster(t, 2, ", duplicate_login: kick_old")
	old, ok, text := rawLogin(t, addrs[0], "Steve")
	if !ok {
		t.Fatalf("first login: %s", text)
	}
	if _, ok, text := rawLogin(t, addrs[1], "steve"); !ok {
		t.Fatalf("second login: %s", text)
	}
	_ = old.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(io.Discard, old); err != nil {
		t.Fatalf("the older session was not closed: %v", err)
	}
	waitStats(t, ps[0], "the older session's end (logged_in_elsewhere)", func(st proxymetrics.Stats) bool { return st.Ended["logged_in_elsewhere"] == 1 })
	if k := ps[0].Cluster().Kicks(); k != 1 {
		t.Fatalf("kicks %d", k)
	}
	waitForNetwork(t, 1, ps...)
}

// TestClusterProxyDies: a proxy that stops heartbeating without taking its
// sessions out (as a killed one) drops out of the network within its TTL:
// its sessions leave the count and its players can log in elsewhere.
func TestClusterProxyDies(t *testing.T) {
	_, be, ps, addrs := startCluster(t, 2, "")
	rawLogin(t, addrs[0], "Steve")
	rawLogin(t, addrs[1], "Alex")
	waitForNetwork(t, 2, ps...)
	// Killing in process: the heartbeat stops and nothing is removed.
	ps[0].Cluster().KeepKeysOnStop(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ps[0].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	died := time.Now()
	waitForNetwork(t, 1, ps[1])
	took := time.Since(died)
	if ttl := ps[1].Cluster().TTL(); took > 20*ttl {
		t.Errorf("the dead proxy's sessions left the count after %v, TTL %v", took, ttl)
	}
	if _, ok, text := rawLogin(t, addrs[1], "steve"); !ok {
		t.Fatalf("login of the dead proxy's player: %s", text)
	}
	_ = be
}

// TestClusterRedisRestart: Redis is killed mid-test: logins go on (decided
// locally, counted as fallbacks, the proxies down in tidegate_cluster_up);
// when it is back the sessions of both proxies are published again and a
// duplicate of a player let in while it was away is refused network-wide.
func TestClusterRedisRestart(t *testing.T) {
	rs, _, ps, addrs := startCluster(t, 2, "")
	if _, ok, text := rawLogin(t, addrs[0], "Steve"); !ok {
		t.Fatal(text)
	}
	waitForNetwork(t, 1, ps...)
	rs.Kill()
	waitfor.For(t, "both cluster clients to see Redis down", func() bool { return !ps[0].Cluster().Up() && !ps[1].Cluster().Up() })
	if _, ok, text := rawLogin(t, addrs[1], "Alex"); !ok {
		t.Fatalf("login with Redis down: %s", text)
	}
	if _, ok, _ := rawLogin(t, addrs[1], "alex"); ok {
		t.Fatal("a duplicate on the same proxy was let in with Redis down")
	}
	if n := ps[1].Cluster().Fallbacks()["login"]; n < 1 {
		t.Fatalf("login fallbacks %d", n)
	}
	rs.Restart()
	waitfor.For(t, "both cluster clients to see Redis up", func() bool { return ps[0].Cluster().Up() && ps[1].Cluster().Up() })
	waitForNetwork(t, 2, ps...)
	if _, ok, text := rawLogin(t, addrs[0], "ALEX"); ok || !strings.Contains(text, "already logged in") {
		t.Fatalf("duplicate of a player let in while Redis was down: ok %v, %s", ok, text)
	}
}

// TestClusterNetworkLimits: network_limits applies the login rate of an
// address across the proxies.
func TestClusterNetworkLimits(t *testing.T) {
	rs := testredis.Start(t)
	be := startBackend(t, mcbackend.Config{})
	extra := `
limits: {handshake_timeout: 20s, login_rate: 0.01, login_burst: 2}`
	var addrs []string
	var ps []*Proxy
	for i := range 2 {
		y := mcConfig(be, fmt.Sprintf(`
cluster: {redis: %q, id: proxy-%d, heartbeat: 200ms, timeout: 3s, login_wait: 10s, network_limits: true}%s`, rs.URL(), i, extra))
		p, addr := startProxy(t, y)
		ps, addrs = append(ps, p), append(addrs, addr)
	}
	waitfor.For(t, "both proxies in the network", func() bool { n, ok := ps[0].Cluster().Network(); return ok && n.Proxies == 2 })
	for i, want := range []bool{true, true, false} {
		_, ok, text := rawLogin(t, addrs[i%2], fmt.Sprintf("player%d", i))
		if ok != want {
			t.Fatalf("login %d at proxy-%d: ok %v (%s), want %v", i, i%2, ok, text, want)
		}
		if !ok && !strings.Contains(text, "Too many logins") {
			t.Fatalf("login %d refused with %s", i, text)
		}
	}
}

// TestClusterHandOverKeepsSessionsPublished: a live upgrade hands a
// session to a new process with the same ID, which publishes it from then
// on: a duplicate is still refused after the old process stopped, and the
// session leaves the network when it ends on the new one.
func TestClusterHandOverKeepsSessionsPublished(t *testing.T) {
	rs := testredis.Start(t)
	be := startBackend(t, mcbackend.Config{})
	oldP, addr := startProxy(t, clusterYAML(be, rs.URL(), "proxy-a", ""))
	newP, _ := startProxy(t, clusterYAML(be, rs.URL(), "proxy-a", ""), func(p *Proxy) { p.clusterReset = false })
	other, otherAddr := startProxy(t, clusterYAML(be, rs.URL(), "proxy-b", ""))
	steve := joinGoMCBot(t, addr, "Steve")
	waitForNetwork(t, 1, oldP, newP, other)
	if n := handOver(t, oldP, newP); n != 1 {
		t.Fatalf("handed over %d sessions", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := oldP.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	steve.echo(t, []byte("after the hand-over"))
	time.Sleep(3 * other.Cluster().TTL()) // the old process's heartbeat would have expired
	waitForNetwork(t, 1, newP, other)
	if _, ok, text := rawLogin(t, otherAddr, "steve"); ok || !strings.Contains(text, "already logged in") {
		t.Fatalf("duplicate after the hand-over: ok %v, %s", ok, text)
	}
	_ = steve.Client.Close()
	waitForNetwork(t, 0, newP, other)
}

// TestReloadRefusesClusterChanges: the cluster section needs a restart.
func TestReloadRefusesClusterChanges(t *testing.T) {
	a, err := testParseConfig(t, mcConfig("127.0.0.1:25565", ""))
	if err != nil {
		t.Fatal(err)
	}
	b := *a
	b.Cluster.Redis = "redis://127.0.0.1:6379/0"
	if ps := a.RestartChanges(&b); len(ps) != 1 || !strings.Contains(ps[0], "cluster changed") {
		t.Fatalf("RestartChanges = %q", ps)
	}
}

// TestClusterHandOverLost: a live upgrade's new process takes a player's
// session and dies without taking it over. The old process's heartbeat
// would keep the player published and refuse them as a duplicate for good;
// HandOverLost releases what was sent, so the player can log in again.
func TestClusterHandOverLost(t *testing.T) {
	_, _, ps, addrs := startCluster(t, 1, "")
	p := ps[0]
	alex := joinGoMCBot(t, addrs[0], "Alex")
	waitForNetwork(t, 1, p)
	send, recv := handoverPair(t)
	t.Cleanup(func() { send.Close() })
	go dieAfterOne(recv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.HandOver(ctx, send, HandOverOptions{Stall: 10 * time.Second, Acked: true}); err == nil {
		t.Fatal("HandOver to a receiver that died: no error")
	}
	_ = alex.Client.Close()
	p.HandOverLost()
	waitForNetwork(t, 0, p)
	joinGoMCBot(t, addrs[0], "alex") // not refused as a duplicate
}
