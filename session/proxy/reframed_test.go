package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/logbuf"
	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// withThreshold sets compression_threshold in a config of offlineConfig's
// or onlineConfig's.
func withThreshold(cfg, threshold string) string {
	return strings.Replace(cfg, "forwarding:", fmt.Sprintf("compression_threshold: %q, forwarding:", threshold), 1)
}

// TestGoMCBotReframed: go-mc's bot (protocol 764) logs in through a proxy
// that tells it another compression threshold than the fake backend's,
// offline and online (encrypted): the client off and the backend on, the
// reverse, and both on at thresholds either side of the other. Its play
// packets, on both sides of both thresholds, come back whole.
func TestGoMCBotReframed(t *testing.T) {
	payloads := [][]byte{[]byte("small"), bytes.Repeat([]byte("re-framed "), 30), bytes.Repeat([]byte("a larger packet "), 1000), make([]byte, 30000)}
	for _, tc := range []struct {
		client  string
		backend int // -1: the backend does not compress
	}{{"off", 64}, {"64", -1}, {"256", 64}, {"16", 1024}} {
		for _, online := range []bool{false, true} {
			t.Run(fmt.Sprintf("client=%s/backend=%d/online=%t", tc.client, tc.backend, online), func(t *testing.T) {
				checkNoLeaks(t)
				srv, be := startBackendServer(t, mcbackend.Config{Compression: tc.backend >= 0, CompressionThreshold: max(tc.backend, 0), Forwarding: mcbackend.ForwardVelocity, ForwardingSecret: []byte(testForwardingSecret)})
				var b *gomcbot.Bot
				var p *Proxy
				if online {
					ss := sessionserver.Start(t)
					ss.AddPlayer(alice)
					ss.RedirectDefaultClient(t)
					var addr string
					p, addr = startProxy(t, withThreshold(onlineConfig(t, be, "velocity", ss.URL, 5*time.Second, 5*time.Second), tc.client))
					b = gomcbot.JoinAs(t, addr, aliceAuth, 10*time.Second)
				} else {
					var addr string
					p, addr = startProxy(t, withThreshold(offlineConfig(t, be, "velocity"), tc.client))
					b = gomcbot.Join(t, addr, "Reframed", 10*time.Second)
				}
				for range 3 {
					for _, pl := range payloads {
						b.Echo(t, pl)
					}
				}
				waitStats(t, p, "the relayed frames", func(st proxymetrics.Stats) bool {
					return st.Routed == 1 && st.FramesC2S >= 12 && st.FramesS2C >= 12 && st.Unframed == 0
				})
				if st := p.Stats(); len(st.Ended) != 0 || len(st.Rejected) != 0 {
					t.Fatalf("proxy ended %v and refused %v, want none", st.Ended, st.Rejected)
				}
				expectOnePlayerThenEnd(t, srv, p, b, mcbackend.ForwardVelocity)
			})
		}
	}
}

// bombFrame is a compressed frame declaring a packet of declared bytes
// whose zlib stream inflates to inflated zero bytes.
func bombFrame(declared, inflated int) []byte {
	body := append(mc.AppendVarInt(nil, int32(declared)), zlibBytes(make([]byte, inflated))...)
	return append(mc.AppendVarInt(nil, int32(len(body))), body...)
}

// TestReframedInflateBombs: a frame that declares more than the protocol's
// limit, or inflates past what it declares, from the client and from the
// backend of a re-framed session, closes the session with a counted
// reason and a log line, and the proxy inflates no more than the limit
// while doing it.
func TestReframedInflateBombs(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fromClient  bool
		frame       []byte
		reason      string
		allocBudget uint64 // the most the proxy may allocate meanwhile
	}{
		{"client declares past 2^21", true, bombFrame(1<<21+1, 4<<20), "inflate_too_large", 2 << 20},
		{"client inflates past its declared size", true, bombFrame(100, 4<<20), "bad_compression", 2 << 20},
		{"backend declares past 8 MiB", false, bombFrame(8<<20+1, 4<<20), "inflate_too_large", 2 << 20},
		{"backend inflates past its declared size", false, bombFrame(100, 4<<20), "bad_compression", 2 << 20},
		{"backend packet too large for the client's plain frames", false, bombFrame(3<<20, 3<<20), "reframe_too_large", 16 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			backendFrames := make(chan []byte, 1)
			var be string
			threshold := "off" // the backend compresses at 64, the client not
			if tc.fromClient {
				// The client compresses at 64, the fake backend not.
				be = startBackend(t, mcbackend.Config{})
				threshold = "64"
			} else {
				be = rawBackend(t, backendFrames)
			}
			var log logbuf.Buffer
			p, addr := startProxy(t, withThreshold(offlineConfig(t, be, "none"), threshold), func(p *Proxy) { p.log = testLoggerTo(&log) })
			c := dial(t, addr)
			if _, err := c.Write(append(handshake(764, "localhost", mc.NextStateLogin), loginStartUUID("Bomber")...)); err != nil {
				t.Fatal(err)
			}
			if tc.fromClient {
				if id, data := readPacket(t, c); id != mc.PacketSetCompression || !bytes.Equal(data, mc.AppendVarInt(nil, 64)) {
					t.Fatalf("packet 0x%02x %x, want Set Compression 64", id, data)
				}
			}
			id, data := readPacket(t, c)
			if tc.fromClient && (id != 0 || len(data) == 0 || data[0] != mc.PacketLoginSuccess) || !tc.fromClient && id != mc.PacketLoginSuccess {
				t.Fatalf("packet 0x%02x %x, want Login Success in the client's framing", id, data)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if !tc.fromClient {
				backendFrames <- tc.frame
			} else if _, err := c.Write(tc.frame); err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, c); err != nil {
				t.Fatalf("client: %v, want the proxy to close", err)
			}
			waitStats(t, p, "the session's end", func(st proxymetrics.Stats) bool { return st.Ended[tc.reason] == 1 && st.Active == 0 })
			runtime.ReadMemStats(&after)
			if grown := after.TotalAlloc - before.TotalAlloc; grown > tc.allocBudget {
				t.Errorf("the proxy allocated %d bytes on the bomb, want at most %d", grown, tc.allocBudget)
			}
			found := false
			for _, l := range log.JSONLines() {
				if l["message"] == "session closed: a frame could not be re-framed" && l["reason"] == tc.reason && l["from_client"] == tc.fromClient && l["error"] != nil {
					found = true
				}
			}
			if !found {
				t.Fatalf("no log line of the %s end from the %s; log:\n%s", tc.reason, map[bool]string{true: "client", false: "backend"}[tc.fromClient], log.String())
			}
		})
	}
}

// rawBackend completes the login of each connection as a backend
// compressing at 64 would (Set Compression, then Login Success in the
// compressed framing), then sends it what comes on frames, and waits for
// the proxy to close.
func rawBackend(t *testing.T, frames <-chan []byte) string {
	t.Helper()
	return testserver.Conns(t, func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		buf := make([]byte, 512)
		_, _ = c.Read(buf) // the handshake and Login Start
		var k mc.Compressor
		reply := k.AppendFrame(nil, mc.AppendSetCompression(nil, 64), -1)
		reply = k.AppendFrame(reply, mc.AppendLoginSuccess(nil, 764, mc.LoginSuccess{Name: []byte("Bomber")}), 64)
		_, _ = c.Write(reply)
		_, _ = c.Write(<-frames)
		_, _ = io.Copy(io.Discard, c) // until the proxy closes
	})
}
