package mcbackend

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
)

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
			b := gomcbot.Join(t, addr, "GoBot", 10*time.Second)
			if b.Client.Name != "GoBot" || [16]byte(b.Client.UUID) != mc.OfflineUUID([]byte("GoBot")) {
				t.Fatalf("login success gave name %q uuid %v", b.Client.Name, b.Client.UUID)
			}
			for _, payload := range [][]byte{[]byte("hi"), bytes.Repeat([]byte("compress me "), 100)} {
				b.Echo(t, payload)
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
	waitfor.For(t, "the status connection to close", func() bool { return srv.Stats().Reactor.Active == 0 })
	mustEqual(t, "pings", srv.Stats().Pings, 1)
}
