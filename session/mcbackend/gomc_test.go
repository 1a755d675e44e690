package mcbackend

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

	"github.com/tidegate/tidegate/protocol/mc"
)

// deadlineDialer dials like go-mc's default dialer and puts a deadline on
// the socket, so that a backend that stops answering fails the test instead
// of hanging it.
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

// TestGoMCBotJoinsAndEchoes joins the backend with go-mc v1.20.2's bot
// (protocol 764, offline) and checks that it reaches play, gets Login (play)
// and receives the echo of play packets it sends.
func TestGoMCBotJoinsAndEchoes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		compression bool
		threshold   int
	}{
		{"plain", false, 0},
		{"compressed", true, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, addr := startBackend(t, Config{Compression: tc.compression, CompressionThreshold: tc.threshold})
			client := bot.NewClient()
			client.Auth.Name = "GoBot"

			joined := make(chan struct{}, 1)
			echoes := make(chan []byte, 8)
			const echoID = packetid.ClientboundPacketID(0x12)
			client.Events.AddListener(
				bot.PacketHandler{ID: packetid.ClientboundLogin, F: func(p pk.Packet) error {
					var eid pk.Int
					var hardcore pk.Boolean
					if err := p.Scan(&eid, &hardcore); err != nil {
						return err
					}
					joined <- struct{}{}
					return nil
				}},
				bot.PacketHandler{ID: echoID, F: func(p pk.Packet) error {
					echoes <- bytes.Clone(p.Data)
					return nil
				}},
			)
			if err := client.JoinServerWithOptions(addr, bot.JoinOptions{MCDialer: deadlineDialer{}}); err != nil {
				t.Fatalf("JoinServer: %v", err)
			}
			if client.Name != "GoBot" || [16]byte(client.UUID) != mc.OfflineUUID([]byte("GoBot")) {
				t.Fatalf("login success gave name %q uuid %v", client.Name, client.UUID)
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
				t.Fatal("no Login (play) within 5s")
			}
			for _, payload := range [][]byte{[]byte("hi"), bytes.Repeat([]byte("compress me "), 100)} {
				if err := client.Conn.WritePacket(pk.Marshal(echoID, pk.ByteArray(payload))); err != nil {
					t.Fatalf("WritePacket: %v", err)
				}
				select {
				case got := <-echoes:
					want := pk.Marshal(echoID, pk.ByteArray(payload)).Data
					if !bytes.Equal(got, want) {
						t.Fatalf("echo %q, want %q", got, want)
					}
				case err := <-gameErr:
					t.Fatalf("HandleGame ended: %v", err)
				case <-time.After(5 * time.Second):
					t.Fatal("no echo within 5s")
				}
			}
			st := srv.Stats()
			mustEqual(t, "play started", st.PlayStarted, 1)
			mustEqual(t, "rejected", st.Rejected(), 0)
		})
	}
}

func TestGoMCPingAndList(t *testing.T) {
	srv, addr := startBackend(t, Config{})
	data, delay, err := bot.PingAndListTimeout(addr, 5*time.Second)
	if err != nil {
		t.Fatalf("PingAndList: %v", err)
	}
	var status struct {
		Version struct {
			Name     string
			Protocol int
		}
		Description struct{ Text string }
	}
	if err := json.Unmarshal(data, &status); err != nil {
		t.Fatalf("status JSON %s: %v", data, err)
	}
	if status.Version.Protocol != bot.ProtocolVersion || status.Version.Name != "tidegate-backend" ||
		status.Description.Text != "tidegate fake backend" {
		t.Fatalf("status %s", data)
	}
	t.Logf("status %s, delay %v", data, delay)
	eventually(t, "the status connection to close", func() bool { return srv.Stats().Reactor.Active == 0 })
	mustEqual(t, "pings", srv.Stats().Pings, 1)
}
