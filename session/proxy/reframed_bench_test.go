package proxy

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// BenchmarkRelayReframed is BenchmarkRelay's burst (32 play frames each
// way per op, 64 relayed frames) through terminated 1.8 logins to the fake
// backend compressing at 64, with the client told
//
//   - backend: the same threshold, so frames pass unchanged (the
//     transparent relay, the baseline);
//   - off: the backend's frames lose their data length marker, the
//     client's gain one (no zlib);
//   - 16: every packet is over the client's threshold and under the
//     backend's: the proxy inflates what the client sends and deflates
//     what it gets, the most a frame can cost.
//
// cpu-ns/frame is the process's CPU time (user and system: proxy, backend
// and client together, as BenchmarkRelay's figures are) per relayed
// frame; B/frame is every byte the process allocated per relayed frame.
func BenchmarkRelayReframed(b *testing.B) {
	for _, client := range []string{"backend", "off", "16"} {
		b.Run("client="+client, func(b *testing.B) {
			be := startBackend(b, mcbackend.Config{Compression: true, CompressionThreshold: 64, SkipJoinGame: true})
			_, addr := startProxy(b, withThreshold(offlineConfig(b, be, "none"), client))
			th := map[string]int{"backend": 64, "off": -1, "16": 16}[client]
			c := dial(b, addr)
			login47(b, c, th)
			const burst = 32
			var k mc.Compressor
			var out []byte
			packet := append([]byte{0x03}, bytes.Repeat([]byte("play 32 bytes of a movement....."), 1)...)
			for i := 0; i < burst; i++ {
				out = k.AppendFrame(out, packet, th)
			}
			in := make([]byte, len(out)) // the echo comes framed as it went
			roundtrip := func() {
				if _, err := c.Write(out); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, in); err != nil {
					b.Fatal(err)
				}
			}
			roundtrip()
			if !bytes.Equal(in, out) {
				b.Fatalf("echo %x, want %x", in[:min(len(in), 64)], out[:min(len(out), 64)])
			}
			for i := 0; i < 100; i++ { // warm buffers and pools
				roundtrip()
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu := processCPU(b)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				roundtrip()
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N*2*burst), "cpu-ns/frame")
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N*2*burst), "B/frame")
		})
	}
}

// processCPU returns the CPU time the process has used, in nanoseconds.
func processCPU(t testing.TB) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// login47 logs a 1.8 client in on c and reads up to its Login Success,
// framed at threshold th (-1: off).
func login47(t testing.TB, c net.Conn, th int) {
	t.Helper()
	if _, err := c.Write(append(handshake(mc.Protocol1_8, "localhost", mc.NextStateLogin), loginStart("Bench")...)); err != nil {
		t.Fatal(err)
	}
	if th >= 0 {
		id, data := readPacket(t, c)
		if got, err := mc.ParseSetCompression(append([]byte{byte(id)}, data...)); err != nil || int(got) != th {
			t.Fatalf("Set Compression %d, %v; want %d", got, err, th)
		}
	}
	id, data := readPacket(t, c)
	if th >= 0 { // id is the data length
		var k mc.Compressor
		packet, err := k.Inflate(append(mc.AppendVarInt(nil, id), data...), th, 1<<20)
		if err != nil || len(packet) == 0 {
			t.Fatalf("Login Success frame: %v", err)
		}
		id, data = int32(packet[0]), packet[1:]
	}
	if id != mc.PacketLoginSuccess {
		t.Fatalf("packet 0x%02x, want Login Success: %s", id, strings.ToValidUTF8(string(data), "?"))
	}
}
