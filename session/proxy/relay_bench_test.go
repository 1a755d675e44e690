package proxy

import (
	"io"
	"runtime"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// BenchmarkRelay relays bursts of 32 small PLAY frames through the proxy to
// the fake backend and back (burst32's shape). One op is one burst: 32
// roundtrips, 64 relayed frames. B/frame is every byte the whole process
// allocated (proxy, backend and client together) per relayed frame, so it
// bounds what the relay allocates. offline is a login the proxy completed
// (velocity forwarding): its relay is the same.
func BenchmarkRelay(b *testing.B) {
	for _, mode := range []string{"minecraft", "raw", "offline"} {
		b.Run(mode, func(b *testing.B) {
			be := startBackend(b, mcbackend.Config{Forwarding: map[bool]mcbackend.Forwarding{true: mcbackend.ForwardVelocity}[mode == "offline"],
				ForwardingSecret: []byte(testForwardingSecret)})
			cfg := mcConfig(be, "")
			switch mode {
			case "raw":
				cfg = rawConfig(be)
			case "offline":
				cfg = offlineConfig(b, be, "velocity")
			}
			_, addr := startProxy(b, cfg)
			c := dial(b, addr)
			login17(b, c, "localhost", "Bench")
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
