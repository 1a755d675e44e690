// Package gomcbot joins go-mc's bot (a third-party Minecraft client,
// protocol 764) through a proxy for tests, echoes play packets through
// tidegate's fake backend (session/mcbackend), and starts that backend.
package gomcbot

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"
	"github.com/Tnze/go-mc/data/packetid"
	mcnet "github.com/Tnze/go-mc/net"
	pk "github.com/Tnze/go-mc/net/packet"

	"github.com/tidegate/tidegate/session/mcbackend"
)

// EchoID is the play packet the fake backend echoes to go-mc bots.
const EchoID = packetid.ClientboundPacketID(0x12)

// Dialer puts a deadline of D on go-mc's socket, so that a stuck proxy
// fails the test instead of hanging it.
type Dialer struct{ D time.Duration }

// DialMCContext implements go-mc's bot.MCDialer.
func (d Dialer) DialMCContext(ctx context.Context, addr string) (*mcnet.Conn, error) {
	conn, err := mcnet.DefaultDialer.DialMCContext(ctx, addr)
	if err != nil {
		return nil, err
	}
	if err := conn.Socket.SetDeadline(time.Now().Add(d.D)); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// Bot is a go-mc bot that joined through a proxy and is in play state.
type Bot struct {
	Client *bot.Client
	echoes chan []byte
}

// Join joins a bot named name through the proxy at addr and waits for
// Login (play); its socket has a deadline of deadline, and it is closed
// when the test ends.
func Join(t testing.TB, addr, name string, deadline time.Duration) *Bot {
	t.Helper()
	b := &Bot{Client: bot.NewClient(), echoes: make(chan []byte, 8)}
	b.Client.Auth.Name = name
	joined := make(chan struct{}, 1)
	b.Client.Events.AddListener(
		bot.PacketHandler{ID: packetid.ClientboundLogin, F: func(pk.Packet) error {
			joined <- struct{}{}
			return nil
		}},
		bot.PacketHandler{ID: EchoID, F: func(p pk.Packet) error {
			b.echoes <- bytes.Clone(p.Data)
			return nil
		}},
	)
	if err := b.Client.JoinServerWithOptions(addr, bot.JoinOptions{MCDialer: Dialer{D: deadline}}); err != nil {
		t.Fatalf("%s: JoinServer through the proxy: %v", name, err)
	}
	gameErr := make(chan error, 1)
	go func() { gameErr <- b.Client.HandleGame() }()
	t.Cleanup(func() {
		_ = b.Client.Close()
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

// Echo sends a play packet and waits for the backend's echo of it.
func (b *Bot) Echo(t testing.TB, payload []byte) {
	t.Helper()
	if err := b.Client.Conn.WritePacket(pk.Marshal(EchoID, pk.ByteArray(payload))); err != nil {
		t.Fatalf("%s: %v", b.Client.Auth.Name, err)
	}
	select {
	case got := <-b.echoes:
		if want := pk.Marshal(EchoID, pk.ByteArray(payload)).Data; !bytes.Equal(got, want) {
			t.Fatalf("%s: echo %q, want %q", b.Client.Auth.Name, got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no echo through the proxy within 10s", b.Client.Auth.Name)
	}
}

// StartBackend starts tidegate's fake game server (session/mcbackend) with
// cfg on a loopback port and one loop, for bots to talk to through a proxy;
// it stops when the test ends. It returns the server and its address.
func StartBackend(t testing.TB, cfg mcbackend.Config) (*mcbackend.Server, string) {
	t.Helper()
	cfg.Reactor.Addrs = []string{"tcp://127.0.0.1:0"}
	cfg.Reactor.Loops = 1
	b, err := mcbackend.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.Stop(ctx)
	})
	a, err := b.Addr(0)
	if err != nil {
		t.Fatal(err)
	}
	return b, a.String()
}
