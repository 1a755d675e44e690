package proxy

import (
	"fmt"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/testredis"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/bungeemsg"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// TestBungeeChannelAnswersForTheNetwork: with two proxies on one Redis, a
// backend's plugin on one proxy is told of the player on the other:
// PlayerList, PlayerCount of a server, GetPlayerServer and UUIDOther (the
// offline UUID the other proxy published) answer for the whole network;
// IPOther, whose address only that proxy knows, is not answered; a
// message about this proxy's own player still is.
func TestBungeeChannelAnswersForTheNetwork(t *testing.T) {
	checkNoLeaks(t)
	rs := testredis.Start(t)
	pb := startBungeeBackend(t, -1)
	_, b := startBackendServer(t, mcbackend.Config{})
	cluster := func(id string) string {
		return fmt.Sprintf("cluster: {redis: %q, id: %s, heartbeat: 200ms, timeout: 3s, login_wait: 10s}\n", rs.URL(), id)
	}
	_, addr0 := startProxy(t, bungeeConfig(pb.addr(), b, "")+cluster("proxy-0"))
	p1, addr1 := startProxy(t, bungeeConfig(pb.addr(), b, "")+cluster("proxy-1"))

	gomcbot.Join(t, addr0, "Faraway", 60*time.Second)
	pb.next(t)
	gomcbot.Join(t, addr1, "Nearby", 60*time.Second)
	pc := pb.next(t)
	waitfor.Value(t, "both players in the network's view", func() int {
		n, ok := p1.Cluster().Network()
		if !ok {
			return 0
		}
		return n.Online
	}, func(n int) bool { return n == 2 })

	modern := bungeemsg.ModernChannel
	if got := pc.ask(t, modern, bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "ALL"}); got.Text != "Faraway, Nearby" {
		t.Errorf("PlayerList ALL: %q, want both proxies' players", got.Text)
	}
	if got := pc.ask(t, modern, bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "a"}); got.Text != "Faraway, Nearby" {
		t.Errorf("PlayerList a: %q", got.Text)
	}
	if got := pc.ask(t, modern, bungeemsg.Msg{Sub: bungeemsg.PlayerCount, Server: "a"}); got.Count != 2 {
		t.Errorf("PlayerCount a: %d, want 2", got.Count)
	}
	if got := pc.ask(t, modern, bungeemsg.Msg{Sub: bungeemsg.GetPlayerServer, Player: "faraway"}); got.Player != "Faraway" || got.Server != "a" {
		t.Errorf("GetPlayerServer faraway: %+v", got)
	}
	uuid := mc.OfflineUUID([]byte("Faraway"))
	if got := pc.ask(t, modern, bungeemsg.Msg{Sub: bungeemsg.UUIDOther, Player: "Faraway"}); got.UUID != fmt.Sprintf("%x", uuid[:]) {
		t.Errorf("UUIDOther Faraway: %q, want %x", got.UUID, uuid[:])
	}
	// Not answered (BungeeCord answers nothing about whom it does not
	// know): the next answer is the GetServer asked after it.
	ipOther, _ := bungeemsg.AppendRequest(nil, bungeemsg.Msg{Sub: bungeemsg.IPOther, Player: "Faraway"})
	pc.send(modern, ipOther)
	if got := pc.ask(t, modern, bungeemsg.Msg{Sub: bungeemsg.GetServer}); got.Sub != bungeemsg.GetServer || got.Server != "a" {
		t.Errorf("after IPOther of a remote player, the next answer: %+v", got)
	}
	if got := pc.ask(t, modern, bungeemsg.Msg{Sub: bungeemsg.GetPlayerServer, Player: "Nearby"}); got.Server != "a" {
		t.Errorf("GetPlayerServer Nearby: %+v", got)
	}
	if r := p1.bungee.RosterReads(); r < 1 || r > 3 {
		t.Errorf("%d reads of the network for six messages, want 1 to 3 (reused for %v)", r, 2*time.Second)
	}
}
