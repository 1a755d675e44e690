package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// routingConfig has exact, wildcard and nested wildcard routes and a
// default group.
const routingConfig = `
listeners: [{listen: "127.0.0.1:0"}]
default_group: lobby
routes:
  - {hosts: [play.example.com, "*.Example.COM."], group: wild}
  - {hosts: ["*.eu.example.com"], group: eu}
  - {hosts: [x.eu.example.com], group: exact}
  - {hosts: ["*.net"], group: tld}
groups:
  lobby: {backends: [{addr: "127.0.0.1:1"}]}
  wild: {backends: [{addr: "127.0.0.1:2"}]}
  eu: {backends: [{addr: "127.0.0.1:3"}]}
  exact: {backends: [{addr: "127.0.0.1:4"}]}
  tld: {backends: [{addr: "127.0.0.1:5"}]}
`

// TestRouteLookup: an exact host wins over a wildcard, a longer wildcard
// suffix over a shorter one, any wildcard over default_group; a wildcard
// matches at any depth but not its own suffix.
func TestRouteLookup(t *testing.T) {
	cfg, err := parseConfig([]byte(routingConfig))
	if err != nil {
		t.Fatal(err)
	}
	r := newRouter(cfg, nil, 1)
	for host, want := range map[string]string{
		"play.example.com":       "wild", // exact, in the same route as the wildcard
		"a.example.com":          "wild",
		"a.b.c.example.com":      "wild", // any depth
		"example.com":            "lobby",
		"eu.example.com":         "wild", // *.example.com, not *.eu.example.com
		"fr.eu.example.com":      "eu",
		"deep.fr.eu.example.com": "eu",
		"x.eu.example.com":       "exact",
		"y.x.eu.example.com":     "eu",
		"mc.net":                 "tld",
		"net":                    "lobby",
		"example.org":            "lobby",
		"":                       "lobby",
		".example.com":           "wild",
		"notexample.com":         "lobby",
	} {
		rt := r.route([]byte(host))
		if rt == nil || rt.group.name != want {
			t.Errorf("route(%q) = %v, want group %s", host, rt, want)
		}
	}
	cfg.DefaultGroup = ""
	if rt := newRouter(cfg, nil, 1).route([]byte("example.org")); rt != nil {
		t.Errorf("without default_group an unrouted host went to %s", rt.group.name)
	}
	if n := testing.AllocsPerRun(100, func() {
		r.route([]byte("deep.fr.eu.example.com"))
		r.route([]byte("play.example.com"))
		r.route([]byte("nowhere.example.org"))
	}); n != 0 {
		t.Errorf("route lookup allocates %v times", n)
	}
}

// BenchmarkRouteLookup is the router's lookup of a normalized host: an
// exact host, a wildcard two labels down, and a host that falls through
// every wildcard suffix to default_group, with 1,000 exact routes besides.
func BenchmarkRouteLookup(b *testing.B) {
	text := routingConfig + "\n"
	cfg, err := parseConfig([]byte(text))
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		cfg.Routes = append(cfg.Routes, config.RouteConfig{Hosts: []string{fmt.Sprintf("server%d.example.org", i)}, Group: "lobby"})
	}
	r := newRouter(cfg, nil, 1)
	for _, bc := range []struct{ name, host string }{
		{"exact", "server500.example.org"},
		{"wildcard", "a.fr.eu.example.com"},
		{"default", "a.b.c.d.unrouted.example.org"},
	} {
		host := []byte(bc.host)
		want := r.route(host)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r.route(host) != want {
					b.Fatal("route changed")
				}
			}
		})
	}
}

// recordingLoginBackend accepts connections; from each it reads the
// handshake and Login Start frames and reports their bytes, answers Login
// Success (1.7.10 form), then echoes.
func recordingLoginBackend(t *testing.T) (string, <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	got := make(chan []byte, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				var buf []byte
				chunk := make([]byte, 4096)
				off := 0
				for frames := 0; frames < 2; {
					n, _, err := mc.SplitFrame(buf[off:], 1<<16)
					if err != nil {
						got <- nil
						return
					}
					if n > 0 {
						off, frames = off+n, frames+1
						continue
					}
					k, err := c.Read(chunk)
					if err != nil {
						got <- nil
						return
					}
					buf = append(buf, chunk[:k]...)
				}
				got <- buf[:off]
				name := []byte("Steve")
				uuid := mc.AppendUUID(nil, mc.OfflineUUID(name), true)
				success := mc.AppendPacket(nil, mc.PacketLoginSuccess, mc.AppendString(mc.AppendString(nil, uuid), name))
				if _, err := c.Write(success); err != nil {
					return
				}
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String(), got
}

// TestRewriteHostTowardBackend: a route's rewrite_host replaces the host
// (and the port when it names one) of the handshake the backend gets, the
// Forge marker kept and everything else unchanged; a route without one
// passes the handshake byte for byte; with bungeecord forwarding the
// rewritten host is the one forwarded.
func TestRewriteHostTowardBackend(t *testing.T) {
	be, got := recordingLoginBackend(t)
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
routes:
  - {hosts: ["*.example.com"], group: main, rewrite_host: "play.internal:25566"}
  - {hosts: [mods.example.net], group: main, rewrite_host: Mods.Internal}
  - {hosts: [plain.example.net], group: main}
groups: {main: {backends: [{addr: %q}]}}
`, be))
	hs := func(addr string, port uint16) []byte {
		return mc.AppendHandshake(nil, mc.Handshake{ProtocolVersion: mc.Protocol1_7_10, Address: []byte(addr), Port: port, NextState: mc.NextStateLogin})
	}
	ls := loginStart("Steve")
	for _, tc := range []struct {
		name, host string
		want       []byte
	}{
		{"wildcard, host and port, FML marker kept", "A.B.Example.com.\x00FML\x00", hs("play.internal\x00FML\x00", 25566)},
		{"host only, FML2 marker kept", "mods.example.net\x00FML2\x00", hs("Mods.Internal\x00FML2\x00", 25565)},
		{"FML3, no rewrite: unchanged", "Plain.Example.net\x00FML3\x00", hs("Plain.Example.net\x00FML3\x00", 25565)},
		{"no marker", "x.example.com", hs("play.internal", 25566)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			login17(t, c, tc.host, "Steve")
			expectRecorded(t, got, append(tc.want, ls...))
			echo(t, c, []byte("after the rewrite"))
		})
	}
	waitStats(t, p, "every frame counted", func(st proxymetrics.Stats) bool { return st.FramesC2S >= 4*3 })

	// BungeeCord forwarding carries the rewritten host.
	be2, got2 := recordingLoginBackend(t)
	_, addr2 := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
routes: [{hosts: [play.example.com], group: main, rewrite_host: "backend.internal:25570"}]
groups: {main: {backends: [{addr: %q}]}}
forwarding: bungeecord
`, be2))
	login17(t, dial(t, addr2), "play.example.com\x00FML\x00", "Steve")
	// The Forge marker becomes the forgeClient property, as BungeeCord sends it.
	fwd := mc.AppendBungeeAddress(nil, []byte("backend.internal"), "127.0.0.1", mc.OfflineUUID([]byte("Steve")),
		[]byte(`[{"name":"forgeClient","value":"true"}]`))
	want := append(hs(string(fwd), 25570), ls...)
	expectRecorded(t, got2, want)
}

// TestRewriteHostOfStatusPing: a status ping's handshake is rewritten too,
// and the ping is answered through the backend.
func TestRewriteHostOfStatusPing(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	_, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
routes: [{hosts: ["*.example.com"], group: main, rewrite_host: "localhost"}]
groups: {main: {backends: [{addr: %q}]}}
`, be))
	c := dial(t, addr)
	msg := append(handshake(mc.Protocol1_20_2, "lobby.example.com", mc.NextStateStatus), mc.AppendPacket(nil, mc.PacketStatusRequest, nil)...)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if id, data := readPacket(t, c); id != mc.PacketStatusResponse || !bytes.Contains(data, []byte("tidegate")) {
		t.Fatalf("status response: id %#x %q", id, data)
	}
}
