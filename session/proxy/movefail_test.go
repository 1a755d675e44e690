package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// The failure paths of a move, end to end: go-mc bots through the proxy
// on loopback, a move's target that overflows, refuses or stalls.

// sendAsync starts moving the named player to group and returns where its
// one result arrives.
func sendAsync(t *testing.T, p *Proxy, name, group string) <-chan admin.SendResponse {
	t.Helper()
	ch := make(chan admin.SendResponse, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ch <- p.Send(ctx, admin.SendSelector{ID: name}, admin.SendTarget{Group: group})
	}()
	return ch
}

// oneResult waits for a send's answer and returns its one result.
func oneResult(t *testing.T, ch <-chan admin.SendResponse) admin.SendResult {
	t.Helper()
	select {
	case res := <-ch:
		if len(res.Results) != 1 {
			t.Fatalf("%d results, want 1: %+v", len(res.Results), res)
		}
		return res.Results[0]
	case <-time.After(40 * time.Second):
		t.Fatal("the send did not answer")
	}
	return admin.SendResult{}
}

// waitChat waits for a System Chat containing want.
func waitChat(t *testing.T, bot *gomcbot.Bot, want string) {
	t.Helper()
	select {
	case chat := <-bot.Chats:
		if !bytes.Contains(chat, []byte(want)) {
			t.Fatalf("chat %q, want %q", chat, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no chat %q", want)
	}
}

// TestMoveQueueOverflowClosesThePair: a client that floods play frames
// after Start Configuration without acknowledging it is closed once it
// passes the 1,024 frames a move holds, counted as move_queue_full (and a
// lost move); the new backend's connection goes with it, and another
// player on the same backend plays on.
func TestMoveQueueOverflowClosesThePair(t *testing.T) {
	checkNoLeaks(t)
	sa, sb, a, b := startMoveBackends(t, mcbackend.ForwardNone, false)
	p, addr := startProxy(t, moveConfig(t, a, b, "none", ""))
	other := gomcbot.Join(t, addr, "Bystander", 60*time.Second)
	flood := gomcbot.Join(t, addr, "Flooder", 60*time.Second)
	flood.HoldAcknowledgement.Store(true)
	res := sendAsync(t, p, "Flooder", "b")
	waitfor.Value(t, "Start Configuration at the flooder", flood.Reconfigurations.Load, func(n int64) bool { return n == 1 })
	for i := range 1100 {
		if err := flood.Send([]byte(fmt.Sprintf("flood %d", i))); err != nil {
			break // closed: the rest goes nowhere
		}
	}
	if r := oneResult(t, res); r.Moved || !strings.Contains(r.Result, "1024 frames") {
		t.Fatalf("the flooder's move: %+v, want it lost for the queue", r)
	}
	waitStats(t, p, "the flooder's session ended as move_queue_full", func(st proxymetrics.Stats) bool {
		return st.Active == 1 && st.Ended["move_queue_full"] == 1 && st.Moves["lost"] == 1 && len(st.Ended) == 1
	})
	ended, _ := flood.Ended()
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the flooder's connection was not closed")
	}
	waitfor.Value(t, "b's connections gone", func() int64 { return sb.Stats().Reactor.Active }, func(n int64) bool { return n == 0 })
	other.Echo(t, []byte("unaffected"))
	waitfor.Value(t, "a's players", func() int64 { return sa.Stats().Playing }, func(n int64) bool { return n == 1 })
}

// fullBackend is a backend that refuses every login as a full server
// does: a Login Disconnect with its reason, then the close.
func fullBackend(t *testing.T) string {
	return testserver.Conns(t, func(c net.Conn) {
		buf := make([]byte, 512)
		if _, err := c.Read(buf); err != nil {
			return
		}
		body := mc.AppendString(mc.AppendVarInt(nil, 0x00), []byte(`{"text":"The server is full!"}`))
		_, _ = c.Write(append(mc.AppendVarInt(nil, int32(len(body))), body...))
		_, _ = io.Copy(io.Discard, c)
	})
}

// TestMoveToFullBackendKeepsThePlayer: a move to a server that refuses the
// login (full) fails before the switch: the player stays where it was,
// told why, plays on there, and the move is counted as refused; a move to
// a dead one is counted as unreachable.
func TestMoveToFullBackendKeepsThePlayer(t *testing.T) {
	checkNoLeaks(t)
	sa, _, a, _ := startMoveBackends(t, mcbackend.ForwardNone, false)
	full, dead := fullBackend(t), closedAddr(t)
	cfg := moveConfig(t, a, full, "none", "") + fmt.Sprintf("  dead: {backends: [{addr: %q}], login: offline, forwarding: none}\n", dead)
	p, addr := startProxy(t, cfg)
	bot := gomcbot.Join(t, addr, "Patient", 60*time.Second)
	if r := send(t, p, "Patient", "b"); r.Moved || !strings.Contains(r.Result, full) {
		t.Fatalf("a move to a full backend: %+v, want a failure naming %s", r, full)
	}
	waitChat(t, bot, "Could not send you to b: the server refused the login")
	bot.Echo(t, []byte("still on a"))
	if r := send(t, p, "Patient", "dead"); r.Moved || !strings.Contains(r.Result, dead) {
		t.Fatalf("a move to a dead backend: %+v", r)
	}
	waitChat(t, bot, "Could not send you to dead: the server is not reachable")
	bot.Echo(t, []byte("still on a, again"))
	st := p.Stats()
	if st.Active != 1 || st.Moves["refused"] != 1 || st.Moves["unreachable"] != 1 || st.Moves["moved"] != 0 || len(st.Ended) != 0 {
		t.Fatalf("proxy: %d active, moves %v, ended %v; want 1, one refused and one unreachable, none ended", st.Active, st.Moves, st.Ended)
	}
	if n := sa.Stats().EchoFrames; n != 2 || bot.Reconfigurations.Load() != 0 || bot.Logins.Load() != 1 {
		t.Fatalf("a echoed %d frames, %d reconfigurations, %d logins; want 2, 0, 1", n, bot.Reconfigurations.Load(), bot.Logins.Load())
	}
}

// TestClientThatStopsReadingMidMove: a client that stops reading its
// socket at Start Configuration (and so never acknowledges) while play
// frames it sent before keep arriving is closed when the move times out,
// counted as move_timeout; the proxy holds none of its input (it went to
// the old backend), the new backend's connection is closed, and nothing
// is left open.
func TestClientThatStopsReadingMidMove(t *testing.T) {
	checkNoLeaks(t)
	sa, sb, a, b := startMoveBackends(t, mcbackend.ForwardNone, false)
	p, addr := startProxy(t, moveConfig(t, a, b, "none", "")+"limits: {connect_timeout: 500ms, handshake_timeout: 500ms}\n")
	bot := gomcbot.Join(t, addr, "Sleeper", 60*time.Second)
	bot.StallOnReconfigure.Store(true)
	res := sendAsync(t, p, "Sleeper", "b")
	waitfor.Value(t, "Start Configuration at the sleeper", bot.Reconfigurations.Load, func(n int64) bool { return n == 1 })
	before := sa.Stats().EchoFrames
	for i := range 100 {
		if err := bot.Send(bytes.Repeat([]byte{byte(i)}, 1000)); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	// The frames before the acknowledgement are play frames: they reach the old backend.
	waitfor.Value(t, "the old backend's echoes", func() int64 { return sa.Stats().EchoFrames }, func(n int64) bool { return n == before+100 })
	if r := oneResult(t, res); r.Moved || !strings.Contains(r.Result, "did not acknowledge") {
		t.Fatalf("the sleeper's move: %+v, want it timed out", r)
	}
	waitStats(t, p, "the sleeper's session ended as move_timeout", func(st proxymetrics.Stats) bool {
		return st.Active == 0 && st.Ended["move_timeout"] == 1 && st.Moves["lost"] == 1
	})
	waitfor.Value(t, "the backends' connections gone", func() int64 { return sa.Stats().Reactor.Active + sb.Stats().Reactor.Active },
		func(n int64) bool { return n == 0 })
}
