package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
	"github.com/tidegate/tidegate/session/proxy/reasons"
	"gopkg.in/yaml.v3"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
)

func testLogger(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
}

// testParseConfig parses a test's YAML as config.Parse does, and then turns
// off each per-address limit (limits.connection_rate, login_rate, their
// subnet_ counterparts and max_sessions_per_subnet) that the YAML does not set: the tests open many
// connections from 127.0.0.1 in bursts, which the defaults would refuse. A
// test of a limit sets it.
func testParseConfig(t testing.TB, yamlText string) (*config.Config, error) {
	t.Helper()
	cfg, _, err := config.Parse("", []byte(yamlText))
	if err != nil {
		return nil, err
	}
	// Whether the YAML sets a limit is read from it as plain YAML (the
	// tests' files use no aliases or merges in limits:).
	var doc struct {
		Limits map[string]any `yaml:"limits"`
	}
	if err := yaml.Unmarshal([]byte(yamlText), &doc); err != nil {
		t.Fatalf("reading the limits the test's YAML sets: %v", err)
	}
	if _, set := doc.Limits["connection_rate"]; !set {
		cfg.Limits.ConnectionRate = 0
	}
	if _, set := doc.Limits["login_rate"]; !set {
		cfg.Limits.LoginRate = 0
	}
	if _, set := doc.Limits["max_sessions_per_subnet"]; !set {
		cfg.Limits.MaxSessionsPerSubnet = 0
	}
	if _, set := doc.Limits["subnet_connection_rate"]; !set {
		cfg.Limits.SubnetConnectionRate = 0
	}
	if _, set := doc.Limits["subnet_login_rate"]; !set {
		cfg.Limits.SubnetLoginRate = 0
	}
	return cfg, nil
}

// parseConfig is config.Parse without a file name or the warnings.
func parseConfig(data []byte) (*config.Config, error) {
	cfg, _, err := config.Parse("", data)
	return cfg, err
}

// startProxy starts a proxy from YAML in which the listen address is
// 127.0.0.1:0 (per-address limits off unless it sets them, see
// testParseConfig); it returns the proxy and its first listener's address.
// The setup functions run between New and Start. It stops when the test
// ends; a test may stop or shut it down before (Stop is idempotent).
func startProxy(t testing.TB, yamlText string, setup ...func(*Proxy)) (*Proxy, string) {
	t.Helper()
	cfg, err := testParseConfig(t, yamlText)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if cfg.Loops == 0 {
		cfg.Loops = 2
	}
	p, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(p)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Stop(ctx); err != nil {
			t.Errorf("stopping proxy: %v", err)
		}
	})
	a, err := p.Addr(0)
	if err != nil {
		t.Fatal(err)
	}
	return p, a.String()
}

// startBackend starts tidegate's fake Minecraft backend.
func startBackend(t testing.TB, cfg mcbackend.Config) string {
	t.Helper()
	_, addr := startBackendServer(t, cfg)
	return addr
}

func mcConfig(backend string, extra string) string {
	return fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: main
groups: {main: {backends: [{addr: %q}]}}
%s`, backend, extra)
}

func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// readPacket reads one uncompressed frame and returns its packet id and data.
func readPacket(t testing.TB, r io.Reader) (int32, []byte) {
	t.Helper()
	var hdr []byte
	for {
		var b [1]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			t.Fatalf("reading frame length: %v", err)
		}
		hdr = append(hdr, b[0])
		if b[0]&0x80 == 0 {
			break
		}
	}
	n, _, err := mc.ReadVarInt(hdr)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatalf("reading frame body of %d: %v", n, err)
	}
	id, data, err := mc.ParsePacketID(body)
	if err != nil {
		t.Fatal(err)
	}
	return id, data
}

func handshake(proto int32, addr string, next int32) []byte {
	return mc.AppendHandshake(nil, mc.Handshake{ProtocolVersion: proto, Address: []byte(addr), Port: 25565, NextState: next})
}

func loginStart(name string) []byte {
	return mc.AppendPacket(nil, mc.PacketLoginStart, mc.AppendString(nil, []byte(name)))
}

// login17 logs in with protocol 5 (1.7.10) and returns once play begins.
func login17(t testing.TB, c net.Conn, host, name string) {
	t.Helper()
	if _, err := c.Write(append(handshake(mc.Protocol1_7_10, host, mc.NextStateLogin), loginStart(name)...)); err != nil {
		t.Fatal(err)
	}
	for {
		id, data := readPacket(t, c)
		if id == mc.PacketLoginSuccess {
			return
		}
		if id == mc.PacketLoginDisconnect {
			t.Fatalf("disconnected during login: %s", data)
		}
	}
}

// echo sends a play packet and checks the backend's echo.
func echo(t *testing.T, c net.Conn, payload []byte) {
	t.Helper()
	if _, err := c.Write(mc.AppendPacket(nil, 0x03, payload)); err != nil {
		t.Fatal(err)
	}
	id, data := readPacket(t, c)
	if id != 0x03 || !bytes.Equal(data, payload) {
		t.Fatalf("echo: id %#x, %d bytes; want 0x03, %d bytes", id, len(data), len(payload))
	}
}

func TestStatusThroughProxy(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	_, addr := startProxy(t, mcConfig(be, ""))
	c := dial(t, addr)
	msg := append(handshake(mc.Protocol1_20_2, "localhost", mc.NextStateStatus), mc.AppendPacket(nil, mc.PacketStatusRequest, nil)...)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	id, data := readPacket(t, c)
	if id != mc.PacketStatusResponse || !bytes.Contains(data, []byte("tidegate")) {
		t.Fatalf("status response: id %#x %q", id, data)
	}
	if _, err := c.Write(mc.AppendPacket(nil, mc.PacketPing, []byte{0, 0, 0, 0, 0, 0, 0x12, 0x34})); err != nil {
		t.Fatal(err)
	}
	id, data = readPacket(t, c)
	if id != mc.PacketPong || !bytes.Equal(data, []byte{0, 0, 0, 0, 0, 0, 0x12, 0x34}) {
		t.Fatalf("pong: id %#x %x", id, data)
	}
}

// recordingBackend accepts one connection, reads want bytes, reports them,
// and then echoes whatever else arrives.
func recordingBackend(t *testing.T, want int) (string, <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, want)
		if _, err := io.ReadFull(c, buf); err != nil {
			got <- nil
			return
		}
		got <- buf
		_, _ = io.Copy(c, c)
	}()
	return ln.Addr().String(), got
}

// expectRecorded waits for the bytes a recordingBackend read and wants them
// to be want.
func expectRecorded(t *testing.T, got <-chan []byte, want []byte) {
	t.Helper()
	select {
	case b := <-got:
		if !bytes.Equal(b, want) {
			t.Fatalf("backend got %q\nwant        %q", b, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the backend got nothing")
	}
}

// TestForgeHandshakePassesUnchangedAndRoutesByHost sends a 1.7.10 Forge
// handshake (\0FML\0 in the address) for a routed host: it must reach that
// host's backend byte for byte.
func TestForgeHandshakePassesUnchangedAndRoutesByHost(t *testing.T) {
	hs := handshake(mc.Protocol1_7_10, "Mods.Example.COM.\x00FML\x00", mc.NextStateLogin)
	ls := loginStart("Steve")
	sent := append(append([]byte(nil), hs...), ls...)
	modded, got := recordingBackend(t, len(sent))
	other := startBackend(t, mcbackend.Config{})
	_, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
routes: [{hosts: [mods.example.com], group: modded}]
default_group: vanilla
groups:
  modded: {backends: [{addr: %q}]}
  vanilla: {backends: [{addr: %q}]}
`, modded, other))
	c := dial(t, addr)
	if _, err := c.Write(sent); err != nil {
		t.Fatal(err)
	}
	expectRecorded(t, got, sent)
	// The relay is transparent after the handshake: the echo comes back.
	payload := []byte("forge play data")
	if _, err := c.Write(mc.AppendPacket(nil, 0x03, payload)); err != nil {
		t.Fatal(err)
	}
	if id, data := readPacket(t, c); id != 0x03 || !bytes.Equal(data, payload) {
		t.Fatalf("echo via routed backend: %#x %q", id, data)
	}
}

func TestLoginAndEchoManyFrames(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, mcConfig(be, ""))
	c := dial(t, addr)
	login17(t, c, "localhost", "Alex")
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 50; i++ {
		payload := make([]byte, rng.IntN(20000))
		for j := range payload {
			payload[j] = byte(rng.Uint32())
		}
		echo(t, c, payload)
	}
	waitStats(t, p, "every frame counted", func(st proxymetrics.Stats) bool { return st.FramesC2S >= 52 && st.FramesS2C >= 51 })
	st := p.Stats()
	if st.Routed != 1 || st.Accepted != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

// waitStats waits until the proxy's stats satisfy cond; a failure shows the
// last stats seen.
func waitStats(t testing.TB, p *Proxy, what string, cond func(proxymetrics.Stats) bool) {
	t.Helper()
	waitfor.Value(t, what, p.Stats, cond)
}

func TestUnknownHostGetsDisconnectMessage(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
routes: [{hosts: [known.example], group: main}]
groups: {main: {backends: [{addr: %q}]}}
`, be))
	c := dial(t, addr)
	if _, err := c.Write(append(handshake(764, "unknown.example", mc.NextStateLogin), loginStart("Bob")...)); err != nil {
		t.Fatal(err)
	}
	id, data := readPacket(t, c)
	if id != mc.PacketLoginDisconnect || !strings.Contains(string(data), "Unknown server address") {
		t.Fatalf("want a login disconnect, got id %#x %q", id, data)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("connection not closed after the disconnect: %v", err)
	}
	if n := p.Stats().Rejected["unknown_host"]; n != 1 {
		t.Fatalf("unknown_host counted %d times", n)
	}
	// A status ping for an unknown host is answered by the proxy itself.
	c2 := dial(t, addr)
	if _, err := c2.Write(append(handshake(764, "unknown.example", mc.NextStateStatus), mc.AppendPacket(nil, 0, nil)...)); err != nil {
		t.Fatal(err)
	}
	if id, data := readPacket(t, c2); id != 0 || !strings.Contains(string(data), "Unknown host") {
		t.Fatalf("local status: %#x %q", id, data)
	}
}

func TestBadInputIsCountedAndClosedCleanly(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	refused := refusedAddr(t)
	cases := []struct {
		name    string
		backend string
		limits  string
		send    []byte
		reason  string
		message string // expected disconnect text, "" for a plain close
	}{
		{"garbage", be, "", []byte("\x05hello"), "bad_handshake", ""},
		{"oversized varint", be, "", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, "bad_frame", ""},
		{"frame over limit", be, "limits: {max_frame: 1000}", append(mc.AppendVarInt(nil, 5000), make([]byte, 100)...), "bad_frame", ""},
		{"malformed 1.6 legacy ping", be, "", []byte{0xfe, 0x01, 0xfa, 0x00, 0x0c}, "bad_handshake", ""},
		{"handshake never completes", be, "limits: {handshake_timeout: 100ms}", []byte{0x10, 0x00}, "handshake_timeout", ""},
		{"preroute cap", be, "limits: {preroute_bytes: 100}", append(mc.AppendVarInt(nil, 1000), make([]byte, 300)...), "preroute_cap", ""},
		{"bad login start", be, "", append(handshake(5, "localhost", 2), mc.AppendPacket(nil, 0, mc.AppendString(nil, []byte("this-name-is-far-too-long")))...), "bad_login_start", "Protocol error"},
		{"backend refuses", refused, "", append(handshake(5, "localhost", 2), loginStart("Zed")...), "backend_unavailable", "server is offline"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, addr := startProxy(t, mcConfig(tc.backend, tc.limits))
			// Another session on the same proxy is untouched by the bad one.
			var good net.Conn
			if tc.backend == be {
				good = dial(t, addr)
				login17(t, good, "localhost", "Good")
			}
			c := dial(t, addr)
			if _, err := c.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatalf("want a clean close, got %v", err)
			}
			if tc.message != "" && !bytes.Contains(got, []byte(tc.message)) {
				t.Fatalf("want a disconnect saying %q, got %q", tc.message, got)
			}
			if tc.message == "" && len(got) != 0 {
				t.Fatalf("want a plain close, got %q", got)
			}
			waitStats(t, p, fmt.Sprintf("the %s refusal", tc.reason), func(st proxymetrics.Stats) bool { return st.Rejected[tc.reason] == 1 })
			if good != nil {
				echo(t, good, []byte("still fine"))
			}
		})
	}
}

// refusedAddr returns a loopback address nobody listens on.
func refusedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}

func rawConfig(backend string) string {
	return fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0", mode: raw, group: main}]
groups: {main: {backends: [{addr: %q}]}}
limits: {high_watermark: 262144, low_watermark: 131072}
`, backend)
}

// TestBackendCloseDeliversEverythingToSlowClient: the backend sends 64 MiB
// and closes at once; a slow client must still receive all of it.
func TestBackendCloseDeliversEverythingToSlowClient(t *testing.T) {
	const size = 64 << 20
	data := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{5, 6}).Read(data) // in bulk: a call a byte is slow under -race
	want := sha256.Sum256(data)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write(data)
		_ = c.Close()
	}()
	p, addr := startProxy(t, rawConfig(ln.Addr().String()))
	c := dial(t, addr)
	_ = c.(*net.TCPConn).SetReadBuffer(64 << 10)
	h := sha256.New()
	buf := make([]byte, 32<<10)
	total := 0
	for {
		n, err := c.Read(buf)
		h.Write(buf[:n])
		total += n
		if total < 8<<20 {
			time.Sleep(time.Millisecond) // slow at first, so the proxy must hold back
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", total, err)
		}
	}
	if total != size || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("client got %d bytes (checksum match %v), want %d", total, bytes.Equal(h.Sum(nil), want[:]), size)
	}
	if st := p.Stats(); st.Reactor.PauseEvents == 0 {
		t.Fatalf("the backend was never paused for the slow client: %+v", st.Reactor)
	}
}

// TestFloodTowardStalledBackendStaysBounded: a client floods toward a
// backend that does not read; the proxy must stop reading the client and its
// heap must not grow with the flood; when the backend reads again, every
// byte arrives in order.
func TestFloodTowardStalledBackendStaysBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	resume := make(chan struct{})
	result := make(chan [32]byte, 1)
	const size = 48 << 20
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.(*net.TCPConn).SetReadBuffer(64 << 10)
		<-resume
		h := sha256.New()
		_, _ = io.CopyN(h, c, size)
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		result <- sum
	}()
	p, addr := startProxy(t, rawConfig(ln.Addr().String()))
	// The flood is made before the dial, whose 30-second deadline starts
	// there: under make stress, making it and the GC once took longer than
	// that, and the write then failed at once, with nothing relayed.
	data := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{9, 9}).Read(data) // in bulk: a call a byte is slow under -race
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	c := dial(t, addr)
	// The write lasts as long as the backend stalls; the waits below bound
	// it, and if one fails the cleanup's close ends it.
	_ = c.SetWriteDeadline(time.Time{})
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		wrote <- err
	}()
	waitfor.Check(t, "the flooding session to pause", func() error {
		st := p.Stats()
		if st.Reactor.Paused > 0 {
			return nil
		}
		select {
		case err := <-wrote:
			wrote <- err // for the next poll
			return fmt.Errorf("the client's write ended (%v) before the proxy paused: last seen %+v", err, st)
		default:
			return fmt.Errorf("last seen %+v", st)
		}
	})
	// A check that nothing happens: load can only hide a proxy that keeps
	// relaying (by running it less), not make a correct one fail.
	time.Sleep(300 * time.Millisecond)
	b1 := p.Stats().BytesC2S
	time.Sleep(300 * time.Millisecond)
	if b2 := p.Stats().BytesC2S; b2 != b1 {
		t.Fatalf("proxy kept relaying toward a stalled backend: %d -> %d", b1, b2)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 8<<20 {
		t.Fatalf("heap grew by %d bytes while the backend stalled", grown)
	}
	close(resume)
	select {
	case sum := <-result:
		if sum != sha256.Sum256(data) {
			t.Fatal("backend received different bytes than the client sent")
		}
	case <-time.After(30 * time.Second):
		select {
		case err := <-wrote:
			t.Fatalf("backend did not receive everything after resuming; the client's write ended: %v", err)
		default:
			t.Fatal("backend did not receive everything after resuming")
		}
	}
	// Everything the client wrote has arrived, so its write has returned.
	if err := <-wrote; err != nil {
		t.Fatalf("the client's write: %v", err)
	}
}

// TestManySessionsNoGoroutineGrowth opens 2,000 sessions through one proxy;
// the goroutine count must not grow with them and every echo must be right.
func TestManySessionsNoGoroutineGrowth(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 sessions")
	}
	be := startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, mcConfig(be, "limits: {max_sessions: 0}"))
	runtime.GC()
	before := leaktest.Goroutines()
	const n = 2000
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		_ = c.SetDeadline(time.Now().Add(60 * time.Second))
		conns[i] = c
		defer c.Close()
		if _, err := c.Write(append(handshake(mc.Protocol1_7_10, "localhost", mc.NextStateLogin), loginStart(fmt.Sprintf("player%d", i))...)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range conns {
		for {
			id, _ := readPacket(t, c)
			if id == mc.PacketLoginSuccess {
				break
			}
		}
	}
	waitStats(t, p, fmt.Sprintf("%d routed sessions", n), func(st proxymetrics.Stats) bool { return st.Routed == n })
	// Dial goroutines end once their connects are handed over (idle pool
	// workers are not counted); wait for that rather than a fixed time.
	waitfor.Check(t, "the dial goroutines to end", func() error {
		if g := leaktest.Goroutines(); g > before+10 {
			return fmt.Errorf("goroutines grew from %d to %d with %d sessions", before, g, n)
		}
		return nil
	})
	for i, c := range conns {
		payload := []byte(fmt.Sprintf("session %d payload", i))
		if _, err := c.Write(mc.AppendPacket(nil, 0x03, payload)); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range conns {
		id, data := readPacket(t, c)
		if id != 0x03 || string(data) != fmt.Sprintf("session %d payload", i) {
			t.Fatalf("session %d: echo %#x %q", i, id, data)
		}
	}
	if st := p.Stats(); st.Active != n {
		t.Fatalf("active sessions %d, want %d", st.Active, n)
	}
}

func TestConfigValidationReportsEveryProblem(t *testing.T) {
	_, err := parseConfig([]byte(`
listeners: [{listen: "nope", mode: quic}, {listen: "127.0.0.1:1", mode: raw}]
default_group: missing
routes: [{hosts: [a.example, A.example.], group: g}]
groups: {g: {backends: [{addr: "x", weight: -1}]}}
limits: {low_watermark: 10, high_watermark: 5}
`))
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{
		"listeners[0].listen", "listeners[0].mode", "listeners[1].group", "default_group",
		"routes[0].hosts[1]", "groups.g.backends[0].addr", "groups.g.backends[0].weight", "limits.low_watermark: 10 is above high_watermark 5",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s:\n%v", want, err)
		}
	}
	if _, err := parseConfig([]byte("listeners: [{listen: ':1'}]\nbogus: 1\n")); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown field not reported: %v", err)
	}
	if _, _, err := config.Load(""); err != nil {
		t.Fatalf("embedded default config is invalid: %v", err)
	}
}

func TestPrometheusCollector(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, mcConfig(be, ""))
	c := dial(t, addr)
	login17(t, c, "localhost", "Metrics")
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(proxymetrics.NewCollector(p)); err != nil {
		t.Fatal(err)
	}
	n, err := testutil.GatherAndCount(reg)
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("gathered %d metrics", n)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP tidegate_proxy_routed_total Sessions whose backend connected.
# TYPE tidegate_proxy_routed_total counter
tidegate_proxy_routed_total 1
`), "tidegate_proxy_routed_total"); err != nil {
		t.Fatal(err)
	}
}

// TestReusePortSharesTheListener starts two proxies on one address with
// reuse_port: both must accept sessions.
func TestReusePortSharesTheListener(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("gnet turns SO_REUSEPORT off on BSD and macOS")
	}
	be := startBackend(t, mcbackend.Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfgText := fmt.Sprintf(`
listeners: [{listen: %q}]
default_group: main
groups: {main: {backends: [{addr: %q}]}}
reuse_port: true
loops: 1
`, addr, be)
	var ps []*Proxy
	for i := 0; i < 2; i++ {
		cfg, err := testParseConfig(t, cfgText)
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(cfg, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil {
			t.Fatalf("proxy %d on the shared address: %v", i, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = p.Stop(ctx)
		})
		ps = append(ps, p)
	}
	for i := 0; i < 40; i++ {
		c := dial(t, addr)
		login17(t, c, "localhost", fmt.Sprintf("reuse%d", i))
		c.Close()
	}
	for i, p := range ps {
		if p.Stats().Accepted == 0 {
			t.Errorf("proxy %d accepted nothing of 40 sessions on a shared port", i)
		}
	}
}

// TestBungeeCordForwardingRewritesHandshake: with forwarding: bungeecord the
// backend gets the handshake address host\0clientIP\0offlineUUID and the
// rest of the client's bytes unchanged.
func TestBungeeCordForwardingRewritesHandshake(t *testing.T) {
	ls := loginStart("Steve")
	hs := mc.Handshake{ProtocolVersion: mc.Protocol1_7_10, Address: []byte("play.example.com"), Port: 25565, NextState: mc.NextStateLogin}
	fwd := hs
	fwd.Address = mc.AppendBungeeAddress(nil, hs.Address, "127.0.0.1", mc.OfflineUUID([]byte("Steve")), nil)
	want := append(mc.AppendHandshake(nil, fwd), ls...)
	be, got := recordingBackend(t, len(want))
	p, addr := startProxy(t, mcConfig(be, "forwarding: bungeecord"))
	c := dial(t, addr)
	if _, err := c.Write(append(mc.AppendHandshake(nil, hs), ls...)); err != nil {
		t.Fatal(err)
	}
	expectRecorded(t, got, want)
	waitStats(t, p, "both frames counted", func(st proxymetrics.Stats) bool { return st.FramesC2S == 2 })
}

// TestIdleTimeoutIsAnEnd: a logged-in session that goes quiet for
// idle_timeout is closed and counted as an end of a relaying session
// (session_ends_total), not as a refusal (rejected_total).
func TestIdleTimeoutIsAnEnd(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, mcConfig(be, "limits: {idle_timeout: 100ms}"))
	c := dial(t, addr)
	login17(t, c, "localhost", "Sleepy")
	// No bound on when: the last activity is stamped with the loop clock,
	// which may lag; what is checked here is how the end is counted.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := io.ReadAll(c); err != nil || len(got) != 0 {
		t.Fatalf("read %q, %v; want the proxy to close the idle session", got, err)
	}
	waitStats(t, p, "the idle_timeout end", func(st proxymetrics.Stats) bool { return st.Ended["idle_timeout"] == 1 })
	if st := p.Stats(); len(st.Rejected) != 0 {
		t.Fatalf("an idle end was counted as a refusal: rejected %v", st.Rejected)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(proxymetrics.NewCollector(p)); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP tidegate_proxy_session_ends_total Relaying sessions the proxy ended, by reason (idle_timeout, fin_timeout, shutdown at the drain deadline, logged_in_elsewhere, move_timeout, move_queue_full, move_lost, a re-framed session's inflate_too_large, bad_compression, reframe_too_large, an inspected session's bad_backend_frame).
# TYPE tidegate_proxy_session_ends_total counter
tidegate_proxy_session_ends_total{reason="bad_backend_frame"} 0
tidegate_proxy_session_ends_total{reason="bad_compression"} 0
tidegate_proxy_session_ends_total{reason="fin_timeout"} 0
tidegate_proxy_session_ends_total{reason="idle_timeout"} 1
tidegate_proxy_session_ends_total{reason="inflate_too_large"} 0
tidegate_proxy_session_ends_total{reason="logged_in_elsewhere"} 0
tidegate_proxy_session_ends_total{reason="move_lost"} 0
tidegate_proxy_session_ends_total{reason="move_queue_full"} 0
tidegate_proxy_session_ends_total{reason="move_timeout"} 0
tidegate_proxy_session_ends_total{reason="reframe_too_large"} 0
tidegate_proxy_session_ends_total{reason="shutdown"} 0
`), "tidegate_proxy_session_ends_total"); err != nil {
		t.Fatal(err)
	}
	n, err := testutil.GatherAndCount(reg, "tidegate_proxy_rejected_total")
	if err != nil {
		t.Fatal(err)
	}
	if want := int(reasons.Count) - 9; n != want {
		t.Fatalf("rejected_total has %d reasons, want %d (all but the end-only idle_timeout, fin_timeout, the three move ends, the three of re-framing and bad_backend_frame)", n, want)
	}
}
