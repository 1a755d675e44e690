package proxy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// Kicks end to end: a relay in front of the fake backend (kickRelay) makes
// it kick its player as a real server does (a play Disconnect, then the
// close); the proxy moves the player to the group's fallback instead.

// kickRelay stands between the proxy and a backend on loopback, copying
// both ways; Kick makes the backend kick the player of a connection. join,
// when set, is written toward the proxy after the backend's first frame
// (its Login Success, uncompressed: 1.7): the Join Game the fake backend
// does not send at that version.
type kickRelay struct {
	addr  string
	join  []byte
	conns chan *kickConn
}

// kickConn is one connection through a kickRelay.
type kickConn struct {
	toProxy net.Conn
	mu      sync.Mutex // the backend's writes and a kick's do not interleave
}

func startKickRelay(t *testing.T, backend string, join []byte) *kickRelay {
	t.Helper()
	r := &kickRelay{join: join, conns: make(chan *kickConn, 8)}
	r.addr = testserver.Conns(t, func(c net.Conn) {
		b, err := net.Dial("tcp", backend)
		if err != nil {
			return
		}
		kc := &kickConn{toProxy: c}
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.toProxy(kc, b)
			_ = c.Close()
		}()
		r.conns <- kc
		_, _ = io.Copy(b, struct{ io.Reader }{c}) // not spliced: the pipes splice keeps would count as leaked descriptors
		_ = b.Close()
		<-done
	})
	return r
}

// toProxy copies what the backend b sends to the proxy.
func (r *kickRelay) toProxy(kc *kickConn, b net.Conn) {
	if r.join != nil {
		body, err := readFrameFrom(b, -1, nil) // Login Success
		if err != nil || !kc.write(append(append(mc.AppendVarInt(nil, int32(len(body))), body...), r.join...)) {
			return
		}
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := b.Read(buf)
		if n > 0 && !kc.write(buf[:n]) || err != nil {
			return
		}
	}
}

func (kc *kickConn) write(b []byte) bool {
	kc.mu.Lock()
	defer kc.mu.Unlock()
	_, err := kc.toProxy.Write(b)
	return err == nil
}

// next returns the relay's next connection.
func (r *kickRelay) next(t *testing.T) *kickConn {
	t.Helper()
	select {
	case kc := <-r.conns:
		return kc
	case <-time.After(20 * time.Second):
		t.Fatal("no connection through the kick relay")
	}
	return nil
}

// kick writes the Disconnect frame toward the proxy, cut into parts (each
// written on its own, a moment apart, so that the proxy reads them
// separately: a pause, not a synchronisation), then closes.
func (kc *kickConn) kick(frame []byte, parts int) {
	kc.mu.Lock()
	defer kc.mu.Unlock()
	step := (len(frame) + parts - 1) / parts
	for i := 0; i < len(frame); i += step {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		_, _ = kc.toProxy.Write(frame[i:min(i+step, len(frame))])
	}
	_ = kc.toProxy.Close()
}

// disconnect764 is a play Disconnect frame at protocol 764 with the JSON
// reason, at threshold (-1: uncompressed).
func disconnect764(reason []byte, threshold int) []byte {
	var k mc.Compressor
	return k.AppendFrame(nil, mc.AppendString(mc.AppendVarInt(nil, 0x1b), reason), threshold)
}

// noKick fails when the bot received a Disconnect.
func noKick(t *testing.T, bot *gomcbot.Bot) {
	t.Helper()
	select {
	case k := <-bot.Kicks:
		t.Fatalf("the client got a Disconnect: %q", k)
	default:
	}
}

// waitKick waits for the bot's Disconnect and checks that it says want.
func waitKick(t *testing.T, bot *gomcbot.Bot, want string) {
	t.Helper()
	select {
	case k := <-bot.Kicks:
		if !bytes.Contains(k, []byte(want)) {
			t.Fatalf("Disconnect %q, want the backend's %q", k, want)
		}
	case <-time.After(20 * time.Second):
		ended, why := bot.Ended()
		select {
		case <-ended:
			t.Fatalf("no Disconnect: the game ended with %v", why())
		default:
			t.Fatal("no Disconnect")
		}
	}
}

// TestGoMCBotKickedFallsBack: go-mc's bot (1.20.2) on group a, whose
// backend kicks it in play, lands on the fallback group b through the
// configuration state, reads the kick's reason in the chat, plays on
// there (its echo counted by b's backend) and never gets the Disconnect;
// with compression (the Disconnect deflated), cut across reads, and with
// a reason that does not decode.
func TestGoMCBotKickedFallsBack(t *testing.T) {
	long := `{"text":"You have been kicked: ` + strings.Repeat("spam ", 30) + `"}`
	for _, tc := range []struct {
		name        string
		compression bool
		reason      []byte
		parts       int
		chat        string
		unreadable  int64
	}{
		{"plain", false, []byte(`{"text":"Kicked by an operator"}`), 1, "(Kicked by an operator)", 0},
		{"compressed", true, []byte(long), 1, "You have been kicked: spam spam", 0},
		{"split", true, []byte(long), 3, "You have been kicked: spam spam", 0},
		{"split plain", false, []byte(`{"text":"cut"}`), 4, "(cut)", 0},
		{"garbled", true, []byte("{\"text\":\xff\x00 " + strings.Repeat("x", 80)), 1, "(no reason given)", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			sa, sb, a, b := startMoveBackends(t, mcbackend.ForwardNone, tc.compression)
			ra := startKickRelay(t, a, nil)
			p, addr := startProxy(t, moveConfig(t, ra.addr, b, "none", ""))
			bot := gomcbot.Join(t, addr, "Kicked", 60*time.Second)
			bot.Echo(t, []byte("on a"))
			th := -1
			if tc.compression {
				th = 64
			}
			ra.next(t).kick(disconnect764(tc.reason, th), tc.parts)
			waitChat(t, bot, tc.chat)
			bot.WaitLogins(t, 2)
			before := sb.Stats().EchoFrames
			bot.Echo(t, bytes.Repeat([]byte("on b "), 40))
			waitfor.Value(t, "the echo counted on b", func() int64 { return sb.Stats().EchoFrames }, func(n int64) bool { return n == before+1 })
			waitfor.Value(t, "a's player gone", func() int64 { return sa.Stats().Playing }, func(n int64) bool { return n == 0 })
			noKick(t, bot)
			waitStats(t, p, "the kick counted", func(st proxymetrics.Stats) bool {
				return st.Kicks["moved"] == 1 && st.Kicks["unreadable_reason"] == tc.unreadable && st.Moves["moved"] == 1 && st.Active == 1 && len(st.Ended) == 0
			})
		})
	}
}

// TestGoMCBotKickReachesTheClient: the kick's own text reaches the client
// whole when no fallback takes the player: the group has none (the
// inspection is off), or the fallback's backend is down, or the fallback
// kicks too (a player is not sent back to a group that kicked it).
func TestGoMCBotKickReachesTheClient(t *testing.T) {
	reason := []byte(`{"text":"Banned: ` + strings.Repeat("griefing ", 20) + `"}`)
	for _, tc := range []struct {
		name    string
		config  func(t *testing.T, a, b string) string
		kicks   int // backends that kick in turn
		counted map[string]int64
	}{
		{"no fallback", func(t *testing.T, a, b string) string {
			return fmt.Sprintf("listeners: [{listen: \"127.0.0.1:0\"}]\ndefault_group: a\ngroups: {a: {backends: [{addr: %q}], login: offline}}\n", a)
		}, 1, map[string]int64{}},
		{"fallback down", func(t *testing.T, a, b string) string {
			return moveConfig(t, a, closedAddr(t), "none", "")
		}, 1, map[string]int64{"none_took": 1}},
		{"fallback kicks too", func(t *testing.T, a, b string) string {
			return strings.Replace(moveConfig(t, a, b, "none", ""), "forwarding: none}", "forwarding: none, fallback: [a]}", 1)
		}, 2, map[string]int64{"moved": 1, "none_took": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			_, _, a, b := startMoveBackends(t, mcbackend.ForwardNone, true)
			ra, rb := startKickRelay(t, a, nil), startKickRelay(t, b, nil)
			p, addr := startProxy(t, tc.config(t, ra.addr, rb.addr))
			bot := gomcbot.Join(t, addr, "Banned", 60*time.Second)
			bot.Echo(t, []byte("on a"))
			ra.next(t).kick(disconnect764(reason, 64), 1)
			if tc.kicks == 2 {
				waitChat(t, bot, "you are now on b")
				bot.WaitLogins(t, 2)
				bot.Echo(t, []byte("on b"))
				rb.next(t).kick(disconnect764(reason, 64), 1)
			}
			waitKick(t, bot, "Banned: griefing griefing")
			ended, _ := bot.Ended()
			select {
			case <-ended:
			case <-time.After(20 * time.Second):
				t.Fatal("the client's connection was not closed after the kick")
			}
			_ = bot.Client.Close() // as a client that read its kick does (the proxy half-closed it when the group has no fallback)
			waitStats(t, p, "the session to end", func(st proxymetrics.Stats) bool { return st.Active == 0 })
			st := p.Stats()
			for o, n := range st.Kicks {
				if n != tc.counted[o] {
					t.Fatalf("kicks %v, want %v", st.Kicks, tc.counted)
				}
			}
		})
	}
}

// joinGame17 is a 1.7.10 Join Game frame with entity ID eid.
func joinGame17(eid uint32) []byte {
	data := binary.BigEndian.AppendUint32(nil, eid)
	data = append(data, 0, 0, 1, 20) // survival, the overworld, easy, 20 players
	return mc.AppendPacket(nil, 0x01, mc.AppendString(data, []byte("default")))
}

// TestKicked17FallsBack: a 1.7.10 client (before 1.20.2: the respawn
// move) whose backend kicks it in play reads the reason in its chat, gets
// the fallback's Join Game and the two Respawns, and plays on the
// fallback (its frame echoed by b's backend); the Disconnect never
// reaches it.
func TestKicked17FallsBack(t *testing.T) {
	checkNoLeaks(t)
	sa, a := startBackendServer(t, mcbackend.Config{})
	sb, b := startBackendServer(t, mcbackend.Config{})
	ra, rb := startKickRelay(t, a, joinGame17(1)), startKickRelay(t, b, joinGame17(2))
	p, addr := startProxy(t, moveConfig(t, ra.addr, rb.addr, "none", ""))
	c := dial(t, addr)
	login17(t, c, "localhost", "Kicked17")
	if id, _ := readPacket(t, c); id != 0x01 {
		t.Fatalf("packet 0x%02x, want a's Join Game", id)
	}
	reason := `{"text":"Kicked for flying"}`
	ra.next(t).kick(mc.AppendPacket(nil, 0x40, mc.AppendString(nil, []byte(reason))), 2)
	var chat bool
	var joined uint32
	respawns := 0
	for respawns < 2 {
		id, data := readPacket(t, c)
		switch id {
		case 0x02:
			chat = chat || bytes.Contains(data, []byte("(Kicked for flying): you are now on b"))
		case 0x01:
			joined = binary.BigEndian.Uint32(data)
		case 0x07:
			respawns++
		case 0x40:
			t.Fatalf("the client got the Disconnect: %q", data)
		}
	}
	if !chat || joined != 2 {
		t.Fatalf("chat with the reason %t, Join Game of entity %d; want the reason and b's entity 2", chat, joined)
	}
	echo := mc.AppendPacket(nil, 0x17, []byte("on b"))
	if _, err := c.Write(echo); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(echo))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, echo) {
		t.Fatalf("echo %q, %v; want %q from b", got, err, echo)
	}
	waitfor.Value(t, "a's player gone", func() int64 { return sa.Stats().Playing }, func(n int64) bool { return n == 0 })
	if n := sb.Stats().EchoFrames; n != 1 {
		t.Fatalf("b echoed %d frames, want 1", n)
	}
	waitStats(t, p, "the kick counted", func(st proxymetrics.Stats) bool { return st.Kicks["moved"] == 1 && st.Active == 1 })
}

// TestGoMCBotKickedInConfiguration: a 1.20.2 backend that kicks the bot
// in the configuration state (a config Disconnect right after its Login
// Success) sends it to the fallback while it configures: the bot joins b's
// play without ever seeing a's kick, and plays on there.
func TestGoMCBotKickedInConfiguration(t *testing.T) {
	checkNoLeaks(t)
	_, sb, a, b := startMoveBackends(t, mcbackend.ForwardNone, false)
	kick := mc.AppendPacket(nil, 0x01, mc.AppendString(nil, []byte(`{"text":"Your mods are not allowed"}`))) // 764: configuration Disconnect
	ra := startKickRelay(t, a, kick)
	p, addr := startProxy(t, moveConfig(t, ra.addr, b, "none", ""))
	bot := gomcbot.Join(t, addr, "Modded", 60*time.Second)
	bot.Echo(t, []byte("on b"))
	if n := sb.Stats().EchoFrames; n != 1 || bot.Logins.Load() != 1 {
		t.Fatalf("b echoed %d frames, the bot joined %d servers; want 1 and 1", n, bot.Logins.Load())
	}
	noKick(t, bot)
	waitStats(t, p, "the kick counted", func(st proxymetrics.Stats) bool { return st.Kicks["moved"] == 1 && st.Active == 1 })
}

// TestKickAfterAFailedMove: a move that fails leaves the player on its
// backend with the inspection where it was (not started anew: the
// stream is in play, mid-way): that backend's kick still moves it.
func TestKickAfterAFailedMove(t *testing.T) {
	checkNoLeaks(t)
	_, sb, a, b := startMoveBackends(t, mcbackend.ForwardNone, true)
	ra := startKickRelay(t, a, nil)
	cfg := moveConfig(t, ra.addr, b, "none", "") + fmt.Sprintf("  c: {backends: [{addr: %q}], login: offline, forwarding: none}\n", closedAddr(t))
	p, addr := startProxy(t, cfg)
	bot := gomcbot.Join(t, addr, "Stays", 60*time.Second)
	kc := ra.next(t)
	if r := send(t, p, "Stays", "c"); r.Moved {
		t.Fatalf("a move to a dead backend: %+v", r)
	}
	waitChat(t, bot, "Could not send you to c")
	bot.Echo(t, []byte("still on a"))
	kc.kick(disconnect764([]byte(`{"text":"Restarting"}`), 64), 1)
	waitChat(t, bot, "(Restarting): you are now on b")
	bot.WaitLogins(t, 2)
	bot.Echo(t, []byte("on b"))
	noKick(t, bot)
	if n := sb.Stats().EchoFrames; n != 1 {
		t.Fatalf("b echoed %d frames, want 1", n)
	}
}
