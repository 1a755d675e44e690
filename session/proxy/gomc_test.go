package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"
	"github.com/Tnze/go-mc/data/packetid"
	mcnet "github.com/Tnze/go-mc/net"
	pk "github.com/Tnze/go-mc/net/packet"

	"github.com/tidegate/tidegate/session/mcbackend"
)

// deadlineDialer puts a deadline on go-mc's socket so a stuck proxy fails
// the test instead of hanging it.
type deadlineDialer struct{}

func (deadlineDialer) DialMCContext(ctx context.Context, addr string) (*mcnet.Conn, error) {
	conn, err := mcnet.DefaultDialer.DialMCContext(ctx, addr)
	if err != nil {
		return nil, err
	}
	if err := conn.Socket.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// TestGoMCBotJoinsThroughProxy: go-mc v1.20.2's bot, a third-party client
// speaking protocol 764, joins offline through the proxy to tidegate's fake
// backend, with and without compression, reaches play and gets its play
// packets echoed.
func TestGoMCBotJoinsThroughProxy(t *testing.T) {
	for _, compression := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "compressed"}[compression], func(t *testing.T) {
			be := startBackend(t, mcbackend.Config{Compression: compression, CompressionThreshold: 64})
			p, addr := startProxy(t, mcConfig(be, ""))
			client := bot.NewClient()
			client.Auth.Name = "ProxyBot"
			joined := make(chan struct{}, 1)
			echoes := make(chan []byte, 8)
			const echoID = packetid.ClientboundPacketID(0x12)
			client.Events.AddListener(
				bot.PacketHandler{ID: packetid.ClientboundLogin, F: func(pk.Packet) error {
					joined <- struct{}{}
					return nil
				}},
				bot.PacketHandler{ID: echoID, F: func(p pk.Packet) error {
					echoes <- bytes.Clone(p.Data)
					return nil
				}},
			)
			if err := client.JoinServerWithOptions(addr, bot.JoinOptions{MCDialer: deadlineDialer{}}); err != nil {
				t.Fatalf("JoinServer through the proxy: %v", err)
			}
			gameErr := make(chan error, 1)
			go func() { gameErr <- client.HandleGame() }()
			t.Cleanup(func() {
				_ = client.Close()
				select {
				case <-gameErr:
				case <-time.After(5 * time.Second):
					t.Error("HandleGame did not return after Close")
				}
			})
			select {
			case <-joined:
			case err := <-gameErr:
				t.Fatalf("HandleGame ended before Login (play): %v", err)
			case <-time.After(5 * time.Second):
				t.Fatal("no Login (play) through the proxy within 5s")
			}
			payload := bytes.Repeat([]byte("through the proxy "), 20)
			if err := client.Conn.WritePacket(pk.Marshal(echoID, pk.ByteArray(payload))); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-echoes:
				if want := pk.Marshal(echoID, pk.ByteArray(payload)).Data; !bytes.Equal(got, want) {
					t.Fatalf("echo %q, want %q", got, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no echo through the proxy within 5s")
			}
			// Counters are added after the write, so the client can be first.
			waitFor(t, func() bool { st := p.Stats(); return st.Routed == 1 && st.FramesS2C >= 4 })
		})
	}
}

func TestGoMCStatusPingThroughProxy(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	_, addr := startProxy(t, mcConfig(be, ""))
	data, _, err := bot.PingAndListTimeout(addr, 5*time.Second)
	if err != nil {
		t.Fatalf("PingAndList through the proxy: %v", err)
	}
	var status struct{ Version struct{ Name string } }
	if err := json.Unmarshal(data, &status); err != nil || status.Version.Name != "tidegate-backend" {
		t.Fatalf("status %s (%v)", data, err)
	}
}

// goMCBot is a go-mc bot that joined through a proxy and is in play state.
type goMCBot struct {
	client *bot.Client
	echoes chan []byte
}

// goMCEchoID is the play packet the fake backend echoes to go-mc bots.
const goMCEchoID = packetid.ClientboundPacketID(0x12)

// joinGoMCBot joins a go-mc bot through the proxy at addr and waits for
// Login (play); it is closed when the test ends.
func joinGoMCBot(t *testing.T, addr, name string) *goMCBot {
	t.Helper()
	b := &goMCBot{client: bot.NewClient(), echoes: make(chan []byte, 8)}
	b.client.Auth.Name = name
	joined := make(chan struct{}, 1)
	b.client.Events.AddListener(
		bot.PacketHandler{ID: packetid.ClientboundLogin, F: func(pk.Packet) error {
			joined <- struct{}{}
			return nil
		}},
		bot.PacketHandler{ID: goMCEchoID, F: func(p pk.Packet) error {
			b.echoes <- bytes.Clone(p.Data)
			return nil
		}},
	)
	if err := b.client.JoinServerWithOptions(addr, bot.JoinOptions{MCDialer: longDeadlineDialer{}}); err != nil {
		t.Fatalf("%s: JoinServer through the proxy: %v", name, err)
	}
	gameErr := make(chan error, 1)
	go func() { gameErr <- b.client.HandleGame() }()
	t.Cleanup(func() {
		_ = b.client.Close()
		select {
		case <-gameErr:
		case <-time.After(5 * time.Second):
			t.Errorf("%s: HandleGame did not return after Close", name)
		}
	})
	select {
	case <-joined:
	case err := <-gameErr:
		t.Fatalf("%s: HandleGame ended before Login (play): %v", name, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no Login (play) through the proxy within 10s", name)
	}
	return b
}

// echo sends a play packet and waits for the backend's echo of it.
func (b *goMCBot) echo(t *testing.T, payload []byte) {
	t.Helper()
	if err := b.client.Conn.WritePacket(pk.Marshal(goMCEchoID, pk.ByteArray(payload))); err != nil {
		t.Fatalf("%s: %v", b.client.Auth.Name, err)
	}
	select {
	case got := <-b.echoes:
		if want := pk.Marshal(goMCEchoID, pk.ByteArray(payload)).Data; !bytes.Equal(got, want) {
			t.Fatalf("%s: echo %q, want %q", b.client.Auth.Name, got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no echo through the proxy within 10s", b.client.Auth.Name)
	}
}

// longDeadlineDialer is deadlineDialer with room for a hand-over.
type longDeadlineDialer struct{}

func (longDeadlineDialer) DialMCContext(ctx context.Context, addr string) (*mcnet.Conn, error) {
	conn, err := mcnet.DefaultDialer.DialMCContext(ctx, addr)
	if err != nil {
		return nil, err
	}
	if err := conn.Socket.SetDeadline(time.Now().Add(60 * time.Second)); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}
