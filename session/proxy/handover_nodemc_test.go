package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/nodemc"
	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// nodeHandOverVersions are the node-minecraft-protocol clients that play
// across a hand-over: the first version with compression, one between and
// the newest.
var nodeHandOverVersions = []string{"1.8.8", "1.16.5", "1.21.11"}

// TestHandOverNodeMCOnlineClients: node-minecraft-protocol clients of
// three versions log in online through the proxy (login: online, velocity
// forwarding to the fake backend, compressed) and, in play, send 120
// payloads each, one every 25 ms; the proxy hands the three sessions to
// another one while they stream. Every client gets every echo back once,
// in order (client.js checks each), and none disconnects.
func TestHandOverNodeMCOnlineClients(t *testing.T) {
	checkNoLeaks(t)
	nodemc.Require(t) // RunClients runs on a goroutine below, where a skip cannot end the test
	ss := sessionserver.Start(t)
	srv, be := startBackendServer(t, mcbackend.Config{Compression: true, CompressionThreshold: nodeMCThreshold,
		Forwarding: mcbackend.ForwardVelocity, ForwardingSecret: []byte(testForwardingSecret)})
	cfg := onlineConfig(t, be, "velocity", ss.URL, 10*time.Second, 30*time.Second)
	oldP, addr := startProxy(t, cfg)
	newP, _ := startProxy(t, cfg)
	const packets = 120
	var clients []nodemc.Client
	for _, v := range nodeHandOverVersions {
		p := onlinePlayer(ss, "H"+strings.ReplaceAll(v, ".", ""))
		c := p.client(v, ss)
		c.Name, c.Addr, c.RawEcho = p.Name, addr, true
		c.Packets, c.PayloadBytes, c.IntervalMS, c.Timeout = packets, 600, 25, 120*time.Second
		clients = append(clients, c)
	}
	results := make(chan []nodemc.Result, 1)
	go func() { results <- nodemc.RunClients(t, clients...) }()
	sessions := int64(len(clients))
	waitStats(t, oldP, "every client in play and streaming", func(st proxymetrics.Stats) bool {
		return st.Active == sessions && st.FramesC2S >= sessions*(4+10)
	})
	if n := handOverV2(t, oldP, newP, nil); n != len(clients) {
		t.Fatalf("handed over %d sessions, want %d", n, len(clients))
	}
	if st := oldP.Stats(); st.Active != 0 {
		t.Fatalf("old proxy still has %d sessions", st.Active)
	}
	var rs []nodemc.Result
	select {
	case rs = <-results:
	case <-time.After(4 * time.Minute):
		t.Fatal("the node clients did not end")
	}
	for _, r := range rs {
		if err := r.Err(); err != nil {
			t.Error(err)
		} else if r.Echoed != packets {
			t.Errorf("%s: %d echoes, want %d", r.Name, r.Echoed, packets)
		}
	}
	if st := newP.Stats(); st.FramesC2S == 0 || st.Unframed != 0 {
		t.Errorf("new proxy: %d frames from the clients, %d unframed", st.FramesC2S, st.Unframed)
	}
	if st := srv.Stats(); st.PlayStarted != sessions || st.Rejected() != 0 {
		t.Errorf("backend: %d in play, %d rejected; want %d, 0", st.PlayStarted, st.Rejected(), sessions)
	}
	waitStats(t, newP, "the sessions to end", func(st proxymetrics.Stats) bool { return st.Active == 0 })
}
