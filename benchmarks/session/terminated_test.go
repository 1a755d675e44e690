package session

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/benchmarks/players"
	"github.com/tidegate/tidegate/internal/testkit/testproxy"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// TestModernPlayers runs the players workload's Modern clients straight to
// a backend behind Velocity modern forwarding (the clients answer its
// request) and through tidegate terminating the login offline and online
// (encrypted both ways, authenticated by the loopback session server):
// every reply comes back right, and each online login asked hasJoined once.
func TestModernPlayers(t *testing.T) {
	secret := []byte("bench-secret")
	keyFile := filepath.Join(t.TempDir(), "forwarding.secret")
	if err := os.WriteFile(keyFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	_, backend := testserver.MCBackend(t, mcbackend.Config{ChunkReplies: true, Forwarding: mcbackend.ForwardVelocity,
		ForwardingSecret: secret, JoinGameDelay: 5 * time.Millisecond, Reactor: reactor.Config{Logger: zerolog.Nop()}})
	ss, err := startSessionServer()
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	p := players.Params{Sessions: 10, Rate: 50, Warmup: 200 * time.Millisecond, Duration: 800 * time.Millisecond,
		Drain: 2 * time.Second, FrameMin: 60, FrameMax: 200, ChunkEvery: 5, ChunkMin: 8 << 10, ChunkMax: 32 << 10,
		Seed: 3, Senders: 2, SendTick: time.Millisecond, Modern: true, VelocitySecret: secret}
	proxy := func(login string) string {
		return testproxy.Start(t, peers.TidegateConfig(peers.RelayConfig{Listen: "127.0.0.1:0", Backend: backend, Cores: 1, Sessions: 16,
			Login: login, ForwardingKeyFile: keyFile, SessionServer: ss.URL()}, false))
	}
	for _, c := range []struct{ name, addr string }{{"direct", backend}, {"offline", proxy("offline")}, {"online", proxy("online")}} {
		before := ss.answers.Load()
		m, err := players.Run(context.Background(), c.addr, p, 20*time.Second, harness.PhaseHooks{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if m.Errors() != 0 || m.Hist.TotalCount() == 0 || m.Chunks == 0 {
			t.Errorf("%s: %d wrong replies (%q), %d round trips, %d chunks", c.name, m.Errors(), m.Samples, m.Hist.TotalCount(), m.Chunks)
		}
		want := int64(0)
		if c.name == "online" {
			want = int64(p.Sessions)
		}
		if got := ss.answers.Load() - before; got != want {
			t.Errorf("%s: the session server answered %d hasJoined, want %d", c.name, got, want)
		}
	}
}
