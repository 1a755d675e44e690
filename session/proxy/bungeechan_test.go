package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/bungeemsg"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// Packet IDs of protocol 764 (1.20.2, go-mc's bot) the plugin backend uses.
const (
	pb764FinishConfiguration = 0x02 // both ways
	pb764PluginCB            = 0x18
	pb764PluginSB            = 0x0f
)

// bungeeBackend is a 1.20.2 backend (a goroutine per connection: it is a
// test's peer) that logs each player in offline, without forwarding,
// compressing at threshold (-1: off), joins it to play, and then writes
// the plugin messages the test asks for and hands the test those the
// proxy sends it.
type bungeeBackend struct {
	ln        net.Listener
	threshold int
	conns     chan *bungeeConn
	wg        sync.WaitGroup
}

// bungeeConn is one player's connection to a bungeeBackend, in play.
type bungeeConn struct {
	c         net.Conn
	threshold int
	mu        sync.Mutex
	k         mc.Compressor // the writer's
	plugins   chan bungeeMsg
	done      chan struct{} // closed when the connection ends
}

// bungeeMsg is a serverbound plugin message.
type bungeeMsg struct {
	channel string
	data    []byte
}

func startBungeeBackend(t *testing.T, threshold int) *bungeeBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &bungeeBackend{ln: ln, threshold: threshold, conns: make(chan *bungeeConn, 4)}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				defer c.Close()
				if err := b.serve(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					t.Logf("plugin backend: %v", err)
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		for {
			select {
			case pc := <-b.conns:
				_ = pc.c.Close()
				continue
			default:
			}
			break
		}
		b.wg.Wait()
	})
	return b
}

func (b *bungeeBackend) addr() string { return b.ln.Addr().String() }

// next returns the next connection in play.
func (b *bungeeBackend) next(t *testing.T) *bungeeConn {
	t.Helper()
	select {
	case pc := <-b.conns:
		t.Cleanup(func() { _ = pc.c.Close() })
		return pc
	case <-time.After(20 * time.Second):
		t.Fatal("no player reached the plugin backend's play state")
		return nil
	}
}

func (b *bungeeBackend) serve(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	pc := &bungeeConn{c: c, threshold: -1, plugins: make(chan bungeeMsg, 16), done: make(chan struct{})}
	defer close(pc.done)
	r := bufio.NewReader(c)
	var rk mc.Compressor
	if _, err := pc.read(r, &rk); err != nil { // the handshake
		return err
	}
	ls, err := pc.read(r, &rk)
	if err != nil {
		return err
	}
	name, err := mc.ParseLoginStart(ls)
	if err != nil {
		return err
	}
	if b.threshold >= 0 {
		pc.write(mc.AppendVarInt(mc.AppendVarInt(nil, mc.PacketSetCompression), int32(b.threshold)))
		pc.threshold = b.threshold
	}
	pc.write(mc.AppendLoginSuccess(nil, 764, mc.LoginSuccess{UUID: mc.OfflineUUID(name), Name: name}))
	for _, want := range []int32{mc.PacketLoginAcknowledged, pb764FinishConfiguration} {
		if want == pb764FinishConfiguration {
			pc.write(mc.AppendVarInt(nil, pb764FinishConfiguration))
		}
		for {
			p, err := pc.read(r, &rk)
			if err != nil {
				return err
			}
			if id, _, _ := mc.ParsePacketID(p); id == want {
				break
			}
		}
	}
	pc.write(mcbackend.AppendJoinGame(nil))
	b.conns <- pc
	for {
		p, err := pc.read(r, &rk)
		if err != nil {
			return err
		}
		rd := mc.NewReader(p)
		if id, _ := rd.ReadVarInt(); id != pb764PluginSB {
			continue
		}
		ch, err := rd.ReadString(256)
		if err != nil {
			return fmt.Errorf("a serverbound plugin message: %w", err)
		}
		pc.plugins <- bungeeMsg{channel: string(ch), data: append([]byte(nil), rd.Rest()...)}
	}
}

// read reads one frame's packet.
func (pc *bungeeConn) read(r *bufio.Reader, k *mc.Compressor) ([]byte, error) {
	n, err := readVarInt(r)
	if err != nil {
		return nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	if pc.threshold < 0 {
		return body, nil
	}
	p, err := k.Inflate(body, pc.threshold, 1<<21)
	return append([]byte(nil), p...), err
}

func readVarInt(r *bufio.Reader) (int32, error) {
	var v uint32
	for i := 0; i < 5; i++ {
		c, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(v), nil
		}
	}
	return 0, errors.New("varint too long")
}

// write writes one packet in the connection's framing.
func (pc *bungeeConn) write(packet []byte) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	_, _ = pc.c.Write(pc.k.AppendFrame(nil, packet, pc.threshold))
}

// send writes a clientbound plugin message on channel.
func (pc *bungeeConn) send(channel string, data []byte) {
	pc.write(append(mc.AppendString(mc.AppendVarInt(nil, pb764PluginCB), []byte(channel)), data...))
}

// ask sends request m on channel and returns the proxy's answer, which
// must come on the same channel.
func (pc *bungeeConn) ask(t *testing.T, channel string, m bungeemsg.Msg) bungeemsg.Msg {
	t.Helper()
	b, err := bungeemsg.AppendRequest(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	pc.send(channel, b)
	got := pc.answer(t)
	if got.channel != channel {
		t.Fatalf("%s answered on %q, want %q", m.Sub, got.channel, channel)
	}
	a, err := bungeemsg.ParseResponse(got.data)
	if err != nil {
		t.Fatalf("%s: the answer % x: %v", m.Sub, got.data, err)
	}
	return a
}

func (pc *bungeeConn) answer(t *testing.T) bungeeMsg {
	t.Helper()
	select {
	case m := <-pc.plugins:
		return m
	case <-pc.done:
		t.Fatal("the backend's connection ended before an answer")
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10s")
	}
	return bungeeMsg{}
}

// bungeeConfig is a proxy whose default group a is the plugin backend and
// whose group b is a fake backend; extra is appended to a's settings.
func bungeeConfig(a, b, extra string) string {
	return fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: a
groups:
  a: {backends: [{addr: %q}], login: offline%s}
  b: {backends: [{addr: %q}], login: offline}
`, a, extra, b)
}

// TestBungeeChannelEndToEnd: a backend's plugin asks the proxy through the
// BungeeCord channel, in both names, with the backend's frames compressed
// or not: GetServers, PlayerCount, UUID, IP and GetServer are answered in
// the backend's framing; a malformed message and an unknown subchannel
// are counted and the session goes on; Forward is refused; none of them
// reaches the client, which does get another plugin message; Connect moves
// the player to the other group.
func TestBungeeChannelEndToEnd(t *testing.T) {
	for _, threshold := range []int{-1, 64} {
		t.Run(fmt.Sprintf("threshold=%d", threshold), func(t *testing.T) {
			checkNoLeaks(t)
			pb := startBungeeBackend(t, threshold)
			cfg := mcbackend.Config{Compression: threshold >= 0, CompressionThreshold: max(threshold, 0)}
			sb, b := startBackendServer(t, cfg)
			p, addr := startProxy(t, bungeeConfig(pb.addr(), b, ""))
			bot := gomcbot.Join(t, addr, "Bungee", 60*time.Second)
			pc := pb.next(t)

			modern, legacy := bungeemsg.ModernChannel, bungeemsg.LegacyChannel
			if got := pc.ask(t, modern, bungeemsg.Msg{Sub: bungeemsg.GetServers}); got.Text != "a, b" {
				t.Errorf("GetServers: %q, want \"a, b\"", got.Text)
			}
			for server, want := range map[string]int32{"ALL": 1, "a": 1, "b": 0} {
				if got := pc.ask(t, legacy, bungeemsg.Msg{Sub: bungeemsg.PlayerCount, Server: server}); got.Server != server || got.Count != want {
					t.Errorf("PlayerCount %s: %+v, want %d", server, got, want)
				}
			}
			if got := pc.ask(t, modern, bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "ALL"}); got.Text != "Bungee" {
				t.Errorf("PlayerList ALL: %q", got.Text)
			}
			uuid := mc.OfflineUUID([]byte("Bungee"))
			if got := pc.ask(t, modern, bungeemsg.Msg{Sub: bungeemsg.UUID}); got.UUID != fmt.Sprintf("%x", uuid[:]) {
				t.Errorf("UUID: %q, want %x", got.UUID, uuid[:])
			}
			local := bot.Client.Conn.Socket.LocalAddr().(*net.TCPAddr)
			if got := pc.ask(t, modern, bungeemsg.Msg{Sub: bungeemsg.IP}); got.Host != "127.0.0.1" || got.Port != int32(local.Port) {
				t.Errorf("IP: %+v, want 127.0.0.1:%d", got, local.Port)
			}
			if got := pc.ask(t, modern, bungeemsg.Msg{Sub: bungeemsg.ServerIP, Server: "b"}); net.JoinHostPort(got.Host, fmt.Sprint(got.Port)) != b {
				t.Errorf("ServerIP b: %+v, want %s", got, b)
			}

			// Bad input: counted, logged, dropped; the session goes on.
			pc.send(modern, []byte{0, 11, 'P', 'l', 'a', 'y', 'e', 'r'}) // cut inside the subchannel's name
			pc.send(legacy, []byte{0, 3, 'F', 'o', 'o'})
			fwd, _ := bungeemsg.AppendRequest(nil, bungeemsg.Msg{Sub: bungeemsg.Forward, Server: "ALL", Channel: "x:y", Data: []byte{1}})
			pc.send(modern, fwd)
			pc.send("test:other", []byte("for the client"))
			if got := pc.ask(t, modern, bungeemsg.Msg{Sub: bungeemsg.GetServer}); got.Server != "a" {
				t.Errorf("GetServer: %q, want a", got.Server)
			}
			select {
			case ch := <-bot.Plugins:
				if ch != "test:other" {
					t.Fatalf("the client got a plugin message on %q, want only test:other", ch)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the client did not get the other plugin message")
			}
			waitStats(t, p, "the messages counted", func(st proxymetrics.Stats) bool {
				return st.Bungee["answered"] == 9 && st.Bungee["malformed"] == 1 && st.Bungee["unknown_subchannel"] == 1 && st.Bungee["refused"] == 1
			})

			// Connect: the player is moved to b.
			connect, _ := bungeemsg.AppendRequest(nil, bungeemsg.Msg{Sub: bungeemsg.Connect, Server: "b"})
			pc.send(legacy, connect)
			bot.WaitLogins(t, 2)
			waitfor.Value(t, "the player in play on b", func() int64 { return sb.Stats().PlayStarted }, func(n int64) bool { return n == 1 })
			select {
			case <-pc.done:
			case <-time.After(10 * time.Second):
				t.Fatal("the old backend's connection is still open after the move")
			}
			st := p.Stats()
			if st.Bungee["acted"] != 1 || st.Moves["moved"] != 1 || st.Active != 1 || len(st.Ended) != 0 {
				t.Fatalf("after Connect: bungee %v, moves %v, %d active, ended %v", st.Bungee, st.Moves, st.Active, st.Ended)
			}
			select {
			case ch := <-bot.Plugins:
				t.Fatalf("the client got a plugin message on %q", ch)
			default:
			}
			_ = bot.Client.Close()
			waitStats(t, p, "the session to end", func(st proxymetrics.Stats) bool { return st.Active == 0 })
		})
	}
}

// TestBungeeChannelOff: with bungee_channel: off the channel's messages
// reach the client like any plugin message, and nothing is answered.
func TestBungeeChannelOff(t *testing.T) {
	pb := startBungeeBackend(t, -1)
	_, b := startBackendServer(t, mcbackend.Config{})
	p, addr := startProxy(t, bungeeConfig(pb.addr(), b, ", bungee_channel: off"))
	bot := gomcbot.Join(t, addr, "Relayed", 60*time.Second)
	pc := pb.next(t)
	req, _ := bungeemsg.AppendRequest(nil, bungeemsg.Msg{Sub: bungeemsg.GetServers})
	pc.send(bungeemsg.ModernChannel, req)
	select {
	case ch := <-bot.Plugins:
		if ch != bungeemsg.ModernChannel {
			t.Fatalf("the client got %q", ch)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the message did not reach the client")
	}
	select {
	case m := <-pc.plugins:
		t.Fatalf("the proxy answered on %q", m.channel)
	default:
	}
	if n := p.Stats().Bungee["answered"]; n != 0 {
		t.Fatalf("%d answered", n)
	}
}

// TestBungeeChannelWithKicks: the channel and a kick's fallback share the
// inspection across moves. The player starts on a (no fallback: the
// channel alone inspects it), Connect takes it to b (whose fallback is
// c): there the channel still answers, as b, and b's kick moves the
// player to c instead of reaching the client.
func TestBungeeChannelWithKicks(t *testing.T) {
	checkNoLeaks(t)
	pa, pb := startBungeeBackend(t, -1), startBungeeBackend(t, -1)
	sc, c := startBackendServer(t, mcbackend.Config{})
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: a
groups:
  a: {backends: [{addr: %q}], login: offline}
  b: {backends: [{addr: %q}], login: offline, fallback: [c]}
  c: {backends: [{addr: %q}], login: offline}
`, pa.addr(), pb.addr(), c))
	bot := gomcbot.Join(t, addr, "Kicked", 60*time.Second)
	ca := pa.next(t)
	connect, _ := bungeemsg.AppendRequest(nil, bungeemsg.Msg{Sub: bungeemsg.Connect, Server: "b"})
	ca.send(bungeemsg.ModernChannel, connect)
	cb := pb.next(t)
	bot.WaitLogins(t, 2)
	if got := cb.ask(t, bungeemsg.ModernChannel, bungeemsg.Msg{Sub: bungeemsg.GetServer}); got.Server != "b" {
		t.Fatalf("GetServer on b: %q", got.Server)
	}
	if got := cb.ask(t, bungeemsg.ModernChannel, bungeemsg.Msg{Sub: bungeemsg.PlayerCount, Server: "a"}); got.Count != 0 {
		t.Fatalf("PlayerCount a after the move: %d", got.Count)
	}
	cb.mu.Lock()
	_, _ = cb.c.Write(disconnect764([]byte(`{"text":"go away"}`), -1))
	cb.mu.Unlock()
	bot.WaitLogins(t, 3)
	waitfor.Value(t, "the player in play on c", func() int64 { return sc.Stats().PlayStarted }, func(n int64) bool { return n == 1 })
	noKick(t, bot)
	if st := p.Stats(); st.Kicks["moved"] != 1 || st.Bungee["acted"] != 1 || st.Bungee["answered"] != 2 {
		t.Fatalf("kicks %v, bungee %v", st.Kicks, st.Bungee)
	}
	_ = bot.Client.Close()
	waitStats(t, p, "the session to end", func(st proxymetrics.Stats) bool { return st.Active == 0 })
}
