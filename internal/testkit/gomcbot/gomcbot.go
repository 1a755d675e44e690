// Package gomcbot joins go-mc's bot (a third-party Minecraft client,
// protocol 764) to tidegate's fake backend (session/mcbackend, started by
// internal/testserver) for tests, directly or through a proxy, and echoes
// play packets through it.
package gomcbot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"
	"github.com/Tnze/go-mc/data/packetid"
	mcnet "github.com/Tnze/go-mc/net"
	pk "github.com/Tnze/go-mc/net/packet"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
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

// Bot is a go-mc bot that joined and is in play state.
type Bot struct {
	Client *bot.Client
	// Logins counts the Login (play) packets: one per server joined.
	// Reconfigurations counts Start Configuration packets (moves).
	Logins, Reconfigurations atomic.Int64
	// HoldAcknowledgement, when set, leaves Start Configuration
	// unanswered (a client that stops answering mid-move).
	HoldAcknowledgement atomic.Bool
	// StallOnReconfigure, when set, stops the bot reading its socket at
	// Start Configuration (a client that stops reading and answering
	// mid-move) until the test ends.
	StallOnReconfigure atomic.Bool
	// Chats gets the data of each System Chat (the component, then the
	// overlay flag); one that finds it full is dropped.
	Chats chan []byte
	// Plugins gets the channel of each play plugin message (custom
	// payload); one that finds it full is dropped.
	Plugins chan string
	// Kicks gets the data of each play Disconnect (the reason, a JSON
	// string at 764); one that finds it full is dropped.
	Kicks    chan []byte
	echoes   chan []byte
	gameDone chan struct{} // closed when HandleGame returns, with gameErr
	unstall  chan struct{} // closed when the test ends
	gameErr  error
}

// Join joins a bot named name to the server at addr (a proxy or the fake
// backend) and waits for Login (play), whose first fields (entity id,
// hardcore) must parse; its socket has a deadline of deadline, and it is
// closed when the test ends.
func Join(t testing.TB, addr, name string, deadline time.Duration) *Bot {
	t.Helper()
	return JoinAs(t, addr, bot.Auth{Name: name}, deadline)
}

// JoinAs is Join with the bot's whole identity: with a UUID and access
// token it logs in online (its join goes to the session server go-mc
// calls, see internal/testkit/sessionserver's RedirectDefaultClient).
func JoinAs(t testing.TB, addr string, auth bot.Auth, deadline time.Duration) *Bot {
	t.Helper()
	name := auth.Name
	b := &Bot{Client: bot.NewClient(), echoes: make(chan []byte, 8), Chats: make(chan []byte, 16), Plugins: make(chan string, 16), Kicks: make(chan []byte, 4), gameDone: make(chan struct{}), unstall: make(chan struct{})}
	b.Client.Auth = auth
	joined := make(chan struct{}, 1)
	b.Client.Events.AddListener(
		bot.PacketHandler{ID: packetid.ClientboundLogin, F: func(p pk.Packet) error {
			var eid pk.Int
			var hardcore pk.Boolean
			if err := p.Scan(&eid, &hardcore); err != nil {
				return err
			}
			b.Logins.Add(1)
			select {
			case joined <- struct{}{}:
			default: // a later server's
			}
			return nil
		}},
		bot.PacketHandler{ID: packetid.ClientboundStartConfiguration, F: func(pk.Packet) error { return b.reconfigure() }},
		bot.PacketHandler{ID: packetid.ClientboundSystemChat, F: func(p pk.Packet) error {
			select {
			case b.Chats <- bytes.Clone(p.Data):
			default:
			}
			return nil
		}},
		bot.PacketHandler{ID: packetid.ClientboundCustomPayload, F: func(p pk.Packet) error {
			var ch pk.Identifier
			if err := p.Scan(&ch); err != nil {
				return err
			}
			select {
			case b.Plugins <- string(ch):
			default:
			}
			return nil
		}},
		bot.PacketHandler{ID: packetid.ClientboundDisconnect, F: func(p pk.Packet) error {
			select {
			case b.Kicks <- bytes.Clone(p.Data):
			default:
			}
			return nil
		}},
		bot.PacketHandler{ID: EchoID, F: func(p pk.Packet) error {
			b.echoes <- bytes.Clone(p.Data)
			return nil
		}},
	)
	if err := b.Client.JoinServerWithOptions(addr, bot.JoinOptions{MCDialer: Dialer{D: deadline}}); err != nil {
		t.Fatalf("%s: JoinServer at %s: %v", name, addr, err)
	}
	go func() {
		b.gameErr = b.Client.HandleGame()
		close(b.gameDone)
	}()
	t.Cleanup(func() {
		close(b.unstall)
		_ = b.Client.Close()
		select {
		case <-b.gameDone:
		case <-time.After(5 * time.Second):
			t.Errorf("%s: HandleGame did not return after Close", name)
		}
	})
	select {
	case <-joined:
	case <-b.gameDone:
		t.Fatalf("%s: HandleGame ended before Login (play): %v", name, b.gameErr)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no Login (play) within 10s", name)
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
	case <-b.gameDone:
		t.Fatalf("%s: HandleGame ended before the echo: %v", b.Client.Auth.Name, b.gameErr)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no echo within 10s", b.Client.Auth.Name)
	}
}

// Send writes one echo play packet with payload, without waiting for its
// echo (NextEcho reads them in order).
func (b *Bot) Send(payload []byte) error {
	return b.Client.Conn.WritePacket(pk.Marshal(EchoID, pk.ByteArray(payload)))
}

// NextEcho returns the payload of the next echo the bot received, waiting
// at most d.
func (b *Bot) NextEcho(d time.Duration) ([]byte, error) {
	select {
	case got := <-b.echoes:
		var payload pk.ByteArray
		if _, err := payload.ReadFrom(bytes.NewReader(got)); err != nil {
			return nil, fmt.Errorf("%s: echo of %d bytes: %w", b.Client.Auth.Name, len(got), err)
		}
		return payload, nil
	case <-b.gameDone:
		return nil, fmt.Errorf("%s: HandleGame ended: %w", b.Client.Auth.Name, b.gameErr)
	case <-time.After(d):
		return nil, fmt.Errorf("%s: no echo within %s", b.Client.Auth.Name, d)
	}
}

// Configuration packet IDs at protocol 764, go-mc's.
const (
	configDisconnect = 0x01
	configFinish     = 0x02 // both ways
	configKeepAlive  = 0x03 // both ways
)

// reconfigure answers Start Configuration as a vanilla client does: the
// acknowledgement, then the configuration state up to Finish
// Configuration (keep-alives answered), back to play. go-mc's bot knows
// the configuration state only at login.
func (b *Bot) reconfigure() error {
	b.Reconfigurations.Add(1)
	if b.StallOnReconfigure.Load() {
		<-b.unstall
		return errors.New("stalled at Start Configuration")
	}
	if b.HoldAcknowledgement.Load() {
		return nil
	}
	conn := b.Client.Conn
	if err := conn.WritePacket(pk.Marshal(packetid.ServerboundConfigurationAcknowledged)); err != nil {
		return err
	}
	for {
		var p pk.Packet
		if err := conn.ReadPacket(&p); err != nil {
			return fmt.Errorf("reconfiguring: %w", err)
		}
		switch p.ID {
		case configFinish:
			return conn.WritePacket(pk.Packet{ID: configFinish})
		case configKeepAlive:
			if err := conn.WritePacket(pk.Packet{ID: configKeepAlive, Data: p.Data}); err != nil {
				return err
			}
		case configDisconnect:
			return fmt.Errorf("disconnected while reconfiguring: % x", p.Data)
		}
	}
}

// WaitLogins waits until the bot has joined n servers.
func (b *Bot) WaitLogins(t testing.TB, n int64) {
	t.Helper()
	waitfor.Check(t, fmt.Sprintf("%s joining %d servers", b.Client.Auth.Name, n), func() error {
		select {
		case <-b.gameDone:
			return fmt.Errorf("HandleGame ended after %d logins: %w", b.Logins.Load(), b.gameErr)
		default:
		}
		if got := b.Logins.Load(); got < n {
			return fmt.Errorf("%d logins", got)
		}
		return nil
	})
}

// Ended returns a channel closed when the bot's game has ended, and its error then.
func (b *Bot) Ended() (<-chan struct{}, func() error) {
	return b.gameDone, func() error { return b.gameErr }
}
