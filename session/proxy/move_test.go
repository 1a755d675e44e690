package proxy

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// moveConfig is a proxy whose groups a (the default) and b, one backend
// each, have their logins completed by the proxy with forwarding fw; a
// falls back to b. extra is appended to each group's settings.
func moveConfig(t testing.TB, a, b, fw, extra string) string {
	t.Helper()
	keys := ""
	if fw == "velocity" {
		secret := filepath.Join(t.TempDir(), "forwarding.secret")
		if err := os.WriteFile(secret, []byte(testForwardingSecret), 0o600); err != nil {
			t.Fatal(err)
		}
		keys = fmt.Sprintf(", forwarding_key_file: %q", secret)
	}
	return fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: a
groups:
  a: {backends: [{addr: %q}], login: offline, forwarding: %s%s, fallback: [b]%s}
  b: {backends: [{addr: %q}], login: offline, forwarding: %s%s%s}
`, a, fw, keys, extra, b, fw, keys, extra)
}

// startMoveBackends starts two fake backends expecting forwarding fw,
// compressing at the same threshold when compression is on.
func startMoveBackends(t *testing.T, fw mcbackend.Forwarding, compression bool) (sa, sb *mcbackend.Server, a, b string) {
	cfg := mcbackend.Config{Compression: compression, CompressionThreshold: 64, Forwarding: fw, ForwardingSecret: []byte(testForwardingSecret)}
	sa, a = startBackendServer(t, cfg)
	sb, b = startBackendServer(t, cfg)
	return sa, sb, a, b
}

// send moves the named player to the group and returns the one result.
func send(t *testing.T, p *Proxy, name, group string) admin.SendResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := p.Send(ctx, admin.SendSelector{ID: name}, admin.SendTarget{Group: group})
	if len(res.Results) != 1 {
		t.Fatalf("send %s to %s: %d results, want 1: %+v", name, group, len(res.Results), res)
	}
	return res.Results[0]
}

// TestGoMCBotMovedBetweenBackends: go-mc's bot (protocol 764), logged in
// through the proxy's offline login with each forwarding, with and
// without compression, is moved between two backends several times; it
// stays connected, joins each server anew, and its play packets are
// echoed by the backend it is on.
func TestGoMCBotMovedBetweenBackends(t *testing.T) {
	for _, fw := range []struct {
		name    string
		backend mcbackend.Forwarding
	}{{"velocity", mcbackend.ForwardVelocity}, {"bungeecord", mcbackend.ForwardBungeeCord}, {"none", mcbackend.ForwardNone}} {
		for _, compression := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/compression=%t", fw.name, compression), func(t *testing.T) {
				checkNoLeaks(t)
				sa, sb, a, b := startMoveBackends(t, fw.backend, compression)
				p, addr := startProxy(t, moveConfig(t, a, b, fw.name, ""))
				bot := gomcbot.Join(t, addr, "Mover", 60*time.Second)
				bot.Echo(t, []byte("on a"))
				servers := map[string]*mcbackend.Server{"a": sa, "b": sb}
				for i, to := range []string{"b", "a", "b", "a"} {
					if r := send(t, p, "Mover", to); !r.Moved {
						t.Fatalf("move %d to %s: %+v", i, to, r)
					}
					bot.WaitLogins(t, int64(i+2))
					before := servers[to].Stats().EchoFrames
					bot.Echo(t, bytes.Repeat([]byte("moved "), 40))
					waitfor.Value(t, "the echo counted on "+to, func() int64 { return servers[to].Stats().EchoFrames }, func(n int64) bool { return n == before+1 })
				}
				// The last move was to a: b's connection is closed, a's the one in play.
				waitfor.Value(t, "b's player gone", func() int64 { return sb.Stats().Playing }, func(n int64) bool { return n == 0 })
				if n := sa.Stats().Playing; n != 1 {
					t.Fatalf("a has %d players in play, want 1", n)
				}
				for name, joins := range map[string]int64{"a": 3, "b": 2} { // a: the login and two moves
					if st := servers[name].Stats(); st.PlayStarted != joins || st.Rejected() != 0 {
						t.Fatalf("%s: %d joins to play, %d rejected; want %d and 0", name, st.PlayStarted, st.Rejected(), joins)
					}
				}
				if got := bot.Reconfigurations.Load(); got != 4 {
					t.Fatalf("%d reconfigurations, want 4", got)
				}
				st := p.Stats()
				if st.Active != 1 || len(st.Ended) != 0 {
					t.Fatalf("proxy: %d active, ended %v; want the one session, none ended", st.Active, st.Ended)
				}
				_ = bot.Client.Close()
				waitStats(t, p, "the session to end", func(st proxymetrics.Stats) bool { return st.Active == 0 })
			})
		}
	}
}

// TestMoveToDeadBackendKeepsThePlayer: a move to a backend that refuses
// connections fails, and the player stays on its backend, told why in the
// chat, still playing there.
func TestMoveToDeadBackendKeepsThePlayer(t *testing.T) {
	checkNoLeaks(t)
	sa, _, a, _ := startMoveBackends(t, mcbackend.ForwardVelocity, true)
	dead := closedAddr(t)
	p, addr := startProxy(t, moveConfig(t, a, dead, "velocity", ""))
	bot := gomcbot.Join(t, addr, "Stayer", 60*time.Second)
	r := send(t, p, "Stayer", "b")
	if r.Moved || !strings.Contains(r.Result, dead) {
		t.Fatalf("a move to a dead backend: %+v, want a failure naming %s", r, dead)
	}
	select {
	case chat := <-bot.Chats:
		if !bytes.Contains(chat, []byte("Could not send you to b")) {
			t.Fatalf("chat %q, want why the move failed", chat)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no chat message about the failed move")
	}
	bot.Echo(t, []byte("still on a"))
	if n := sa.Stats().EchoFrames; n != 1 {
		t.Fatalf("a echoed %d frames, want 1", n)
	}
	if bot.Reconfigurations.Load() != 0 || bot.Logins.Load() != 1 {
		t.Fatalf("the client was reconfigured %d times and joined %d servers, want 0 and 1", bot.Reconfigurations.Load(), bot.Logins.Load())
	}
	if st := p.Stats(); st.Moves["unreachable"] != 1 || st.Moves["moved"] != 0 {
		t.Fatalf("moves %v, want the one unreachable", st.Moves)
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	_ = ln.Close()
	return a
}

// TestBackendDeathFallsBack: players on a backend that stops are moved to
// the fallback group, told why, and play on there; none is disconnected.
func TestBackendDeathFallsBack(t *testing.T) {
	checkNoLeaks(t)
	sa, sb, a, b := startMoveBackends(t, mcbackend.ForwardBungeeCord, false)
	p, addr := startProxy(t, moveConfig(t, a, b, "bungeecord", ""))
	var bots []*gomcbot.Bot
	for i := range 3 {
		bots = append(bots, gomcbot.Join(t, addr, fmt.Sprintf("Falls%d", i), 60*time.Second))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = sa.Stop(ctx)
	for _, bot := range bots {
		bot.WaitLogins(t, 2)
		bot.Echo(t, []byte("on the fallback"))
	}
	waitfor.Value(t, "b's players", func() int64 { return sb.Stats().Playing }, func(n int64) bool { return n == 3 })
	if st := p.Stats(); st.Active != 3 {
		t.Fatalf("proxy: %d active, want the 3 sessions", st.Active)
	}
}

// TestClientThatStopsAnsweringMidMove: a client that never acknowledges
// Start Configuration is closed when the move times out, counted as
// move_timeout.
func TestClientThatStopsAnsweringMidMove(t *testing.T) {
	checkNoLeaks(t)
	_, _, a, b := startMoveBackends(t, mcbackend.ForwardNone, false)
	p, addr := startProxy(t, moveConfig(t, a, b, "none", "")+"limits: {connect_timeout: 1s, handshake_timeout: 1s}\n")
	bot := gomcbot.Join(t, addr, "Staller", 60*time.Second)
	bot.HoldAcknowledgement.Store(true)
	r := send(t, p, "Staller", "b")
	if r.Moved {
		t.Fatalf("a move the client never acknowledged: %+v", r)
	}
	waitStats(t, p, "the session to end as move_timeout", func(st proxymetrics.Stats) bool {
		return st.Active == 0 && st.Ended["move_timeout"] == 1
	})
}

// TestSendRefusals: what cannot be moved says why.
func TestSendRefusals(t *testing.T) {
	checkNoLeaks(t)
	_, _, a, b := startMoveBackends(t, mcbackend.ForwardNone, false)
	p, addr := startProxy(t, moveConfig(t, a, b, "none", ""))
	gomcbot.Join(t, addr, "Refused", 60*time.Second)
	if r := send(t, p, "Refused", "nope"); r.Moved || !strings.Contains(r.Result, `group "nope"`) {
		t.Fatalf("to a group that does not exist: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res := p.Send(ctx, admin.SendSelector{ID: "nobody"}, admin.SendTarget{Group: "b"}); len(res.Results) != 0 {
		t.Fatalf("a player who is not there: %+v", res)
	}
	res := p.Send(ctx, admin.SendSelector{Group: "a"}, admin.SendTarget{Group: "b"})
	if res.Moved != 1 || res.NotMoved != 0 {
		t.Fatalf("bulk send of group a: %+v", res)
	}
}

// TestGoMCBotOnlineMovedBetweenBackends: an online-mode player, its client
// connection encrypted (CFB8 both ways) and compressed, is moved between
// two backends and back; the proxy's frames to it (Start Configuration,
// the chat of a failed move) are encrypted in line with the relay's.
func TestGoMCBotOnlineMovedBetweenBackends(t *testing.T) {
	checkNoLeaks(t)
	ss := sessionserver.Start(t)
	ss.AddPlayer(alice)
	ss.RedirectDefaultClient(t)
	sa, sb, a, b := startMoveBackends(t, mcbackend.ForwardVelocity, true)
	cfg := strings.ReplaceAll(moveConfig(t, a, b, "velocity", ""), "login: offline", "login: online")
	p, addr := startProxy(t, fmt.Sprintf("online_mode: {session_server: %q}\n", ss.URL)+cfg)
	bot := gomcbot.JoinAs(t, addr, aliceAuth, 60*time.Second)
	bot.Echo(t, bytes.Repeat([]byte("encrypted "), 30))
	for i, to := range []string{"b", "a", "b"} {
		if r := send(t, p, alice.Name, to); !r.Moved {
			t.Fatalf("move %d to %s: %+v", i, to, r)
		}
		bot.WaitLogins(t, int64(i+2))
		bot.Echo(t, bytes.Repeat([]byte("moved encrypted "), 30))
	}
	if sa.Stats().PlayStarted != 2 || sb.Stats().PlayStarted != 2 {
		t.Fatalf("joins to play: a %d, b %d; want 2 each", sa.Stats().PlayStarted, sb.Stats().PlayStarted)
	}
	if r := send(t, p, alice.Name, "nope"); r.Moved {
		t.Fatalf("a move to no group: %+v", r)
	}
	p.cur().router.groups["a"].backends[0].addr = closedAddr(t) // a dead backend, as the router sees it
	if r := send(t, p, alice.Name, "a"); r.Moved {
		t.Fatalf("a move to a dead backend: %+v", r)
	}
	select {
	case chat := <-bot.Chats:
		if !bytes.Contains(chat, []byte("Could not send you to a")) {
			t.Fatalf("chat %q", chat)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no chat about the failed move")
	}
	bot.Echo(t, []byte("still on b, still encrypted"))
}
