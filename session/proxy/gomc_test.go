package proxy

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// TestGoMCBotJoinsThroughProxy: go-mc v1.20.2's bot, a third-party client
// speaking protocol 764, joins offline through the proxy to tidegate's fake
// backend, with and without compression, reaches play and gets its play
// packets echoed.
func TestGoMCBotJoinsThroughProxy(t *testing.T) {
	for _, compression := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "compressed"}[compression], func(t *testing.T) {
			be := startBackend(t, mcbackend.Config{Compression: compression, CompressionThreshold: 64})
			p, addr := startProxy(t, mcConfig(be, ""))
			b := gomcbot.Join(t, addr, "ProxyBot", 10*time.Second)
			b.Echo(t, bytes.Repeat([]byte("through the proxy "), 20))
			// Counters are added after the write, so the client can be first.
			waitStats(t, p, "the routed session's frames", func(st proxymetrics.Stats) bool { return st.Routed == 1 && st.FramesS2C >= 4 })
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
type goMCBot struct{ *gomcbot.Bot }

// joinGoMCBot joins a go-mc bot through the proxy at addr and waits for
// Login (play), with room for a hand-over in its socket's deadline; it is
// closed when the test ends.
func joinGoMCBot(t *testing.T, addr, name string) *goMCBot {
	t.Helper()
	return &goMCBot{gomcbot.Join(t, addr, name, 60*time.Second)}
}

// echo sends a play packet and waits for the backend's echo of it.
func (b *goMCBot) echo(t *testing.T, payload []byte) {
	t.Helper()
	b.Echo(t, payload)
}
