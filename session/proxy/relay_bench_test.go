package proxy

import (
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// BenchmarkRelay relays bursts of 32 small PLAY frames through the proxy to
// the fake backend and back (burst32's shape). One op is one burst: 32
// roundtrips, 64 relayed frames. B/frame is every byte the whole process
// allocated (proxy, backend and client together) per relayed frame, so it
// bounds what the relay allocates. offline is a login the proxy completed
// (velocity forwarding): its relay is the same. online is a 1.7.10 login
// authenticated by the proxy (bungeecord forwarding): the relay decrypts
// and encrypts the client's side in place, and the client does the same
// (in place or in a reused buffer). inspected is offline with a fallback
// group: the backend's frames are walked for kicks (session/proxy/inspect).
func BenchmarkRelay(b *testing.B) {
	for _, mode := range []string{"minecraft", "raw", "offline", "inspected", "online"} {
		b.Run(mode, func(b *testing.B) {
			fw := map[string]mcbackend.Forwarding{"offline": mcbackend.ForwardVelocity, "inspected": mcbackend.ForwardVelocity, "online": mcbackend.ForwardBungeeCord}[mode]
			be := startBackend(b, mcbackend.Config{Forwarding: fw, ForwardingSecret: []byte(testForwardingSecret)})
			ss := sessionserver.Start(b)
			ss.AddPlayer(alice)
			cfg := mcConfig(be, "")
			switch mode {
			case "raw":
				cfg = rawConfig(be)
			case "offline":
				cfg = offlineConfig(b, be, "velocity")
			case "inspected":
				cfg = moveConfig(b, be, be, "velocity", "")
			case "online":
				cfg = onlineConfig(b, be, "bungeecord", ss.URL, 5*time.Second, 5*time.Second)
			}
			_, addr := startProxy(b, cfg)
			c := dial(b, addr)
			if mode == "online" {
				c = onlineLogin17(b, c, ss)
			} else {
				login17(b, c, "localhost", "Bench")
			}
			const burst = 32
			var out []byte
			for i := 0; i < burst; i++ {
				out = mc.AppendPacket(out, 0x03, make([]byte, 32))
			}
			in := make([]byte, len(out))
			roundtrip := func() {
				if _, err := c.Write(out); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, in); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; i < 100; i++ { // warm buffers and pools
				roundtrip()
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				roundtrip()
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N*2*burst), "B/frame")
		})
	}
}
