package proxy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
	"github.com/tidegate/tidegate/internal/testkit/seam"
	"github.com/tidegate/tidegate/internal/testkit/testpng"
	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
	"github.com/tidegate/tidegate/session/proxy/status"
)

// startBackendServer is startBackend returning the server too, for its counters.
func startBackendServer(t testing.TB, cfg mcbackend.Config) (*mcbackend.Server, string) {
	t.Helper()
	cfg.Reactor.Logger = testLogger(t)
	return testserver.MCBackend(t, cfg)
}

// statusDoc is the status JSON as a client reads it.
type statusDoc struct {
	Version struct {
		Name     string `json:"name"`
		Protocol int32  `json:"protocol"`
	} `json:"version"`
	Players struct {
		Max    int `json:"max"`
		Online int `json:"online"`
	} `json:"players"`
	Description json.RawMessage `json:"description"`
	Favicon     string          `json:"favicon"`
}

// goMCPing pings addr with go-mc's client (protocol 764; it checks the Pong
// itself) and decodes the status.
func goMCPing(t *testing.T, addr string) statusDoc {
	t.Helper()
	data, _, err := bot.PingAndListTimeout(addr, 10*time.Second)
	if err != nil {
		t.Fatalf("go-mc PingAndList %s: %v", addr, err)
	}
	var st statusDoc
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("status %s: %v", data, err)
	}
	return st
}

// rawStatusJSON pings addr with protocol v in raw bytes and returns the
// status JSON after checking the Pong.
func rawStatusJSON(t *testing.T, addr string, v int32) string {
	t.Helper()
	c := dial(t, addr)
	if _, err := c.Write(append(handshake(v, "localhost", mc.NextStateStatus), mc.AppendPacket(nil, mc.PacketStatusRequest, nil)...)); err != nil {
		t.Fatal(err)
	}
	id, data := readPacket(t, c)
	if id != mc.PacketStatusResponse {
		t.Fatalf("status response: packet %#x", id)
	}
	js := string(stringField(t, data))
	if _, err := c.Write(mc.AppendPacket(nil, mc.PacketPing, []byte{9, 8, 7, 6, 5, 4, 3, 2})); err != nil {
		t.Fatal(err)
	}
	if id, data := readPacket(t, c); id != mc.PacketPong || !bytes.Equal(data, []byte{9, 8, 7, 6, 5, 4, 3, 2}) {
		t.Fatalf("pong: %#x %x", id, data)
	}
	return js
}

// statusServer is a backend for the status tests that go beyond the fake
// backend: it answers status requests with json after delay, or (with
// json empty) closes each connection at once. It counts the connections.
type statusServer struct {
	ln    net.Listener
	json  string
	delay time.Duration
	conns atomic.Int64
	wg    sync.WaitGroup
}

func startStatusServer(t *testing.T, js string, delay time.Duration) *statusServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &statusServer{ln: ln, json: js, delay: delay}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				s.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *statusServer) addr() string { return s.ln.Addr().String() }

func (s *statusServer) serve(c net.Conn) {
	if s.json == "" {
		return
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var buf []byte
	frames := 0
	for frames < 2 { // the handshake and the Status Request
		var b [512]byte
		n, err := c.Read(b[:])
		if err != nil {
			return
		}
		buf = append(buf, b[:n]...)
		frames = 0
		for off := 0; ; frames++ {
			n, _, err := mc.SplitFrame(buf[off:], mc.MaxFrameLength)
			if err != nil || n == 0 {
				break
			}
			off += n
		}
	}
	time.Sleep(s.delay)
	_, _ = c.Write(mc.AppendStatusResponse(nil, []byte(s.json)))
	_, _ = io.Copy(io.Discard, c)
}

// TestStatusCacheStorm: 40 go-mc pings at once, and 40 more after, within
// the TTL reach the backend as one status request; all see its status.
func TestStatusCacheStorm(t *testing.T) {
	be, beAddr := startBackendServer(t, mcbackend.Config{StatusProtocol: 764})
	p, addr := startProxy(t, mcConfig(beAddr, "status: {cache_ttl: 1m}"))
	const n = 40
	for round := range 2 {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				data, _, err := bot.PingAndListTimeout(addr, 10*time.Second)
				if err == nil && !bytes.Contains(data, []byte(`"name":"tidegate-backend","protocol":764`)) {
					err = fmt.Errorf("status %s", data)
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	if got := be.Stats().StatusRequests; got != 1 {
		t.Fatalf("the backend answered %d status requests, want 1", got)
	}
	st := p.Stats()
	if st.StatusCached+st.StatusWaited != 2*n || st.StatusRefreshes != 1 || st.StatusRefreshFailures != 0 || st.Routed != 0 {
		t.Fatalf("cached %d + waited %d, want %d; refreshes %d, failures %d; routed %d",
			st.StatusCached, st.StatusWaited, 2*n, st.StatusRefreshes, st.StatusRefreshFailures, st.Routed)
	}
	compareMetrics(t, p, fmt.Sprintf(`
# HELP tidegate_proxy_status_refreshes_total Fetches of a group's status from its backends, by result (ok, failed).
# TYPE tidegate_proxy_status_refreshes_total counter
tidegate_proxy_status_refreshes_total{result="failed"} 0
tidegate_proxy_status_refreshes_total{result="ok"} 1
# HELP tidegate_proxy_status_cached_answers_total Status pings answered from a group's cached status, by when (at once, or after waiting for a refresh).
# TYPE tidegate_proxy_status_cached_answers_total counter
tidegate_proxy_status_cached_answers_total{when="after_refresh"} %d
tidegate_proxy_status_cached_answers_total{when="at_once"} %d
`, st.StatusWaited, st.StatusCached), "tidegate_proxy_status_refreshes_total", "tidegate_proxy_status_cached_answers_total")
}

// TestStatusRefreshInFlightIsShared: pings arriving while a refresh is in
// flight (the backend takes a second to answer) all wait for that one; they
// cost no goroutine each, and the backend sees one connection.
func TestStatusRefreshInFlightIsShared(t *testing.T) {
	js := `{"version":{"name":"Slow 1.20.2","protocol":764},"players":{"max":10,"online":4},"description":"§aslow but fine"}`
	slow := startStatusServer(t, js, time.Second)
	p, addr := startProxy(t, mcConfig(slow.addr(), "status: {cache_ttl: 1m}"))
	before := leaktest.Goroutines()
	const n = 100
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = dial(t, addr)
		if _, err := conns[i].Write(append(handshake(764, "localhost", mc.NextStateStatus), mc.AppendPacket(nil, mc.PacketStatusRequest, nil)...)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // all of them wait now
	if g := leaktest.Goroutines(); g > before+10 {
		t.Fatalf("goroutines grew from %d to %d with %d pings waiting", before, g, n)
	}
	for i, c := range conns {
		id, data := readPacket(t, c)
		if id != mc.PacketStatusResponse || string(stringField(t, data)) != js {
			t.Fatalf("ping %d: %#x %q", i, id, data)
		}
	}
	if got := slow.conns.Load(); got != 1 {
		t.Fatalf("the backend got %d connections, want 1", got)
	}
	if st := p.Stats(); st.StatusWaited != n || st.StatusRefreshes != 1 {
		t.Fatalf("waited %d (want %d), refreshes %d", st.StatusWaited, n, st.StatusRefreshes)
	}
}

// TestStatusCacheTTLExpiry: within the TTL the cached status is served
// (even once the backend's player count changed); once it expires the next
// ping fetches it again and sees the change.
func TestStatusCacheTTLExpiry(t *testing.T) {
	be, beAddr := startBackendServer(t, mcbackend.Config{StatusProtocol: 764})
	var clock fakeClock
	_, addr := startProxy(t, mcConfig(beAddr, "status: {cache_ttl: 5s}"), installFakeClock(&clock))
	if st := goMCPing(t, addr); st.Players.Online != 0 {
		t.Fatalf("online %d, want 0", st.Players.Online)
	}
	joinGoMCBot(t, beAddr, "Direct") // straight to the backend: 1 in play
	clock.advance(4 * time.Second)
	if st := goMCPing(t, addr); st.Players.Online != 0 {
		t.Fatalf("within the TTL: online %d, want the cached 0", st.Players.Online)
	}
	if got := be.Stats().StatusRequests; got != 1 {
		t.Fatalf("%d status requests within the TTL, want 1", got)
	}
	clock.advance(time.Second)
	if st := goMCPing(t, addr); st.Players.Online != 1 {
		t.Fatalf("after the TTL: online %d, want 1", st.Players.Online)
	}
	if got := be.Stats().StatusRequests; got != 2 {
		t.Fatalf("%d status requests after the TTL, want 2", got)
	}
}

// TestStatusProtocolModes: the cached status keeps the backend's version
// object for every client by default; with status.protocol client each
// client gets its own protocol number, and the rest of the JSON is the
// backend's.
func TestStatusProtocolModes(t *testing.T) {
	_, beAddr := startBackendServer(t, mcbackend.Config{StatusProtocol: 340})
	_, addr := startProxy(t, mcConfig(beAddr, ""))
	if st := goMCPing(t, addr); st.Version.Protocol != 340 || st.Version.Name != "tidegate-backend" {
		t.Fatalf("backend mode, go-mc (764): version %+v, want the backend's 340", st.Version)
	}
	want := `{"version":{"name":"tidegate-backend","protocol":340},"players":{"max":100,"online":0},"description":{"text":"tidegate fake backend"}}`
	if js := rawStatusJSON(t, addr, 47); js != want {
		t.Fatalf("backend mode, protocol 47: %s\nwant the backend's JSON as it was: %s", js, want)
	}

	_, addr = startProxy(t, mcConfig(beAddr, "status: {protocol: client}"))
	if st := goMCPing(t, addr); st.Version.Protocol != 764 || st.Version.Name != "tidegate-backend" {
		t.Fatalf("client mode, go-mc: version %+v, want 764", st.Version)
	}
	want = `{"description":{"text":"tidegate fake backend"},"players":{"max":100,"online":0},"version":{"name":"tidegate-backend","protocol":47}}`
	if js := rawStatusJSON(t, addr, 47); js != want {
		t.Fatalf("client mode, protocol 47: %s\nwant %s", js, want)
	}
}

// TestStatusCacheOffline: a group with no backend up answers go-mc's ping
// with the configured offline reply (MOTD with colour codes, version name,
// favicon, counts) and a login with its offline message; a legacy ping
// gets the same in its form.
func TestStatusCacheOffline(t *testing.T) {
	dead := refusedAddr(t)
	icon, pngData := testpng.Write(t, t.TempDir(), 64, 64)
	p, addr := startProxy(t, mcConfig(dead, fmt.Sprintf(`
health: {failures: 1, cooldown: 1h, offline_message: '{"text":"Back soon","color":"gold"}'}
status:
  offline:
    motd: "§cSurvival§r is §lresting"
    version_name: "§4Maintenance"
    protocol: -1
    favicon: %q
    online: 3
    max: 50
`, icon)))
	// The first login's connect fails: the backend is down from then on.
	for _, c := range startLogins(t, addr, "localhost", "First") {
		if js := readDisconnect(t, c); js != `{"text":"Back soon","color":"gold"}` {
			t.Fatalf("disconnect %s", js)
		}
	}
	st := goMCPing(t, addr)
	if st.Version.Name != "§4Maintenance" || st.Version.Protocol != -1 || st.Players.Online != 3 || st.Players.Max != 50 ||
		string(st.Description) != `{"text":"§cSurvival§r is §lresting"}` {
		t.Fatalf("offline status %+v %s", st, st.Description)
	}
	if want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngData); st.Favicon != want {
		t.Fatalf("favicon %.60q..., want the PNG's data URI", st.Favicon)
	}
	if got := legacyPing(t, addr, []byte{0xfe, 0x01}); got != "§1\x00-1\x00§4Maintenance\x00§cSurvival§r is §lresting\x003\x0050" {
		t.Fatalf("legacy offline answer %q", got)
	}
	if r := p.Stats().Rejected; r["no_healthy_backend"] != 2 || r["backend_unavailable"] != 1 || r["legacy_ping"] != 1 {
		t.Fatalf("rejections %v", r)
	}
	if st := p.Stats(); st.StatusRefreshes+st.StatusRefreshFailures != 0 {
		t.Fatalf("refreshes %d, failures %d: want none for a group that is down", st.StatusRefreshes, st.StatusRefreshFailures)
	}
}

// TestStatusRefreshFailureMarksNothing: a backend that accepts and closes
// without a status makes the refresh fail: pings get the offline answer
// (counted backend_unavailable), the failure is cached for the TTL (the
// next pings do not reach the backend), the backend's health is untouched
// (logins still go there), and once the TTL is over the next ping tries it
// again.
func TestStatusRefreshFailureMarksNothing(t *testing.T) {
	mute := startStatusServer(t, "", 0)
	var clock fakeClock
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: main
groups: {main: {backends: [{addr: %q}], offline_message: "Main is broken"}}
status: {cache_ttl: 5s}
`, mute.addr()), installFakeClock(&clock))
	for range 3 {
		st := goMCPing(t, addr)
		if string(st.Description) != `{"text":"Main is broken"}` || st.Version.Name != config.DefaultStatusVersionName || st.Version.Protocol != 764 {
			t.Fatalf("status after a failed refresh: %+v %s", st, st.Description)
		}
	}
	if got := mute.conns.Load(); got != 1 {
		t.Fatalf("the backend got %d connections within the TTL, want 1", got)
	}
	b := health(t, p, mute.addr())
	if !b.Up || b.Failures != 0 || b.ConnectFailures != 0 || b.LastError != "" {
		t.Fatalf("a failed refresh changed the backend's health: %+v", b)
	}
	if st := p.Stats(); st.StatusRefreshFailures != 1 || st.Rejected["backend_unavailable"] != 3 || len(p.GroupsDown()) != 0 {
		t.Fatalf("refresh failures %d, rejections %v, groups down %v", st.StatusRefreshFailures, st.Rejected, p.GroupsDown())
	}
	// A login still dials the backend (which closes it).
	c := dial(t, addr)
	if _, err := c.Write(append(handshake(mc.Protocol1_20_2, "localhost", mc.NextStateLogin), loginStart("Still")...)); err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(c)
	waitfor.For(t, "the login's connection to the backend", func() bool { return mute.conns.Load() == 2 })
	clock.advance(5 * time.Second)
	goMCPing(t, addr)
	if got := mute.conns.Load(); got != 3 {
		t.Fatalf("after the TTL the backend got %d connections, want 3 (one more refresh)", got)
	}
	if st := p.Stats(); st.StatusRefreshFailures != 2 {
		t.Fatalf("refresh failures %d, want 2", st.StatusRefreshFailures)
	}
}

// TestStatusSumOnline: with sum_online the online count is the sum over
// the group's backends, each asked once per TTL.
func TestStatusSumOnline(t *testing.T) {
	a, aAddr := startBackendServer(t, mcbackend.Config{StatusProtocol: 764, StatusDescription: "A"})
	b, bAddr := startBackendServer(t, mcbackend.Config{StatusProtocol: 764, StatusDescription: "B"})
	joinGoMCBot(t, aAddr, "OnA")
	joinGoMCBot(t, bAddr, "OnB1")
	joinGoMCBot(t, bAddr, "OnB2")
	_, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: main
groups: {main: {backends: [{addr: %q}, {addr: %q}]}}
status: {sum_online: true, cache_ttl: 1m}
`, aAddr, bAddr))
	for range 3 {
		st := goMCPing(t, addr)
		if st.Players.Online != 3 || st.Players.Max != 100 || string(st.Description) != `{"text":"A"}` {
			t.Fatalf("summed status %+v %s: want 3 online, the rest from the first backend", st, st.Description)
		}
	}
	if ra, rb := a.Stats().StatusRequests, b.Stats().StatusRequests; ra != 1 || rb != 1 {
		t.Fatalf("status requests %d and %d, want one each", ra, rb)
	}
	if got := legacyPing(t, addr, []byte{0xfe}); got != "A§3§100" {
		t.Fatalf("beta legacy ping: %q", got)
	}
}

// legacyPing sends a legacy ping in raw bytes and returns the kick reason,
// after which the proxy must have closed the connection.
func legacyPing(t *testing.T, addr string, ping []byte) string {
	t.Helper()
	c := dial(t, addr)
	if _, err := c.Write(ping); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("legacy ping %x: %v", ping, err)
	}
	reason, n, err := mc.ParseLegacyKick(got)
	if err != nil || n != len(got) || n == 0 {
		t.Fatalf("legacy ping %x: answer %x is not one kick packet (%v)", ping, got, err)
	}
	return reason
}

// lobbyAndSurvival starts a proxy whose default group is a lobby backend
// (protocol 764, described as lobbyDesc) and which routes survival.example
// to a survival backend (protocol 78, "Survival"), for the legacy pings;
// it returns the lobby backend, the proxy and its address.
func lobbyAndSurvival(t *testing.T, lobbyDesc string) (*mcbackend.Server, *Proxy, string) {
	t.Helper()
	lobby, lobbyAddr := startBackendServer(t, mcbackend.Config{StatusProtocol: 764, StatusDescription: lobbyDesc})
	_, survivalAddr := startBackendServer(t, mcbackend.Config{StatusProtocol: 78, StatusDescription: "Survival"})
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: lobby
routes: [{hosts: [survival.example], group: survival}]
groups:
  lobby: {backends: [{addr: %q}]}
  survival: {backends: [{addr: %q}]}
`, lobbyAddr, survivalAddr))
	return lobby, p, addr
}

// TestLegacyPings: the three pre-1.7 forms, in raw bytes, get the routed
// group's status as a kick packet: a 1.6 ping by its host (another group
// than the default one), the older forms from the default group.
func TestLegacyPings(t *testing.T) {
	lobby, p, addr := lobbyAndSurvival(t, "Lobby §lone")
	ping16 := mc.AppendLegacyPing(nil, mc.LegacyPing{Kind: mc.LegacyPing16, Protocol: 78, Host: "Survival.Example.", Port: 25565})
	for _, tc := range []struct {
		name string
		ping []byte
		want string
	}{
		{"beta: FE", []byte{0xfe}, "Lobby one§0§100"},
		{"1.4: FE 01", []byte{0xfe, 0x01}, "§1\x00764\x00tidegate-backend\x00Lobby §lone\x000\x00100"},
		{"1.6: FE 01 FA MC|PingHost, routed by its host", ping16, "§1\x0078\x00tidegate-backend\x00Survival\x000\x00100"},
		{"1.6 for a host without a route: the default group", mc.AppendLegacyPing(nil, mc.LegacyPing{Kind: mc.LegacyPing16, Protocol: 78, Host: "other.example", Port: 25565}),
			"§1\x00764\x00tidegate-backend\x00Lobby §lone\x000\x00100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := legacyPing(t, addr, tc.ping); got != tc.want {
				t.Fatalf("answer %q\nwant   %q", got, tc.want)
			}
		})
	}
	if n := p.Stats().Rejected["legacy_ping"]; n != 4 {
		t.Fatalf("legacy_ping counted %d times, want 4", n)
	}
	if n := lobby.Stats().StatusRequests; n != 1 {
		t.Fatalf("lobby answered %d status requests, want 1 (cached)", n)
	}
}

// TestLegacyPingArrivingInPieces: a 1.6 client writes its ping a few bytes
// at a time; the proxy waits for the rest (and answers it as 1.6, routed by
// its host) rather than answering the first FE as a Beta ping. A lone FE
// is answered as Beta after the short wait, and at once when the client
// half-closes. FE followed by a byte other than 01 is a modern frame.
func TestLegacyPingArrivingInPieces(t *testing.T) {
	// The first three pieces (FE, 01, FA: the start of a 1.6 ping) arrive
	// within the wait, the rest after it: a loaded machine can delay a
	// write by tens of milliseconds, so the wait is made long enough that
	// only the pause meant to pass it does. It is set before the proxy's
	// loops start, and put back after they stop.
	seam.Set(t, &status.LegacyPingWait, time.Second)
	_, p, addr := lobbyAndSurvival(t, "Lobby")
	ping16 := mc.AppendLegacyPing(nil, mc.LegacyPing{Kind: mc.LegacyPing16, Protocol: 78, Host: "survival.example", Port: 25565})

	c := dial(t, addr)
	for i, piece := range [][]byte{ping16[:1], ping16[1:2], ping16[2:3], ping16[3:20], ping16[20:]} {
		if _, err := c.Write(piece); err != nil {
			t.Fatal(err)
		}
		pause := 15 * time.Millisecond
		if i == 2 {
			pause = status.LegacyPingWait + 200*time.Millisecond // past the wait
		}
		time.Sleep(pause)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if reason, _, _ := mc.ParseLegacyKick(got); reason != "§1\x0078\x00tidegate-backend\x00Survival\x000\x00100" {
		t.Fatalf("1.6 ping in pieces: %q", reason)
	}

	start := time.Now()
	if got := legacyPing(t, addr, []byte{0xfe}); got != "Lobby§0§100" || time.Since(start) < status.LegacyPingWait {
		t.Fatalf("lone FE: %q after %v", got, time.Since(start))
	}

	c = dial(t, addr)
	if _, err := c.Write([]byte{0xfe, 0x01}); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(c)
	if reason, _, _ := mc.ParseLegacyKick(got); err != nil || !strings.HasPrefix(reason, "§1\x00764\x00") {
		t.Fatalf("FE 01 then a half-close: %q, %v", reason, err)
	}

	// FE 00 ... is the VarInt 126: a modern frame, here a bad handshake.
	c = dial(t, addr)
	if _, err := c.Write(append([]byte{0xfe, 0x00}, make([]byte, 126)...)); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(c); err != nil || len(got) != 0 {
		t.Fatalf("FE 00 frame: %q, %v", got, err)
	}
	waitStats(t, p, "the bad_handshake refusal", func(st proxymetrics.Stats) bool { return st.Rejected["bad_handshake"] == 1 })
	if n := p.Stats().Rejected["legacy_ping"]; n != 3 {
		t.Fatalf("legacy_ping counted %d times, want 3", n)
	}
}

// TestLegacyPingUnknownHost: without a default group, a 1.6 ping for a host
// without a route, and the older forms, get the proxy's unknown-host answer.
func TestLegacyPingUnknownHost(t *testing.T) {
	_, beAddr := startBackendServer(t, mcbackend.Config{})
	_, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
routes: [{hosts: [known.example], group: main}]
groups: {main: {backends: [{addr: %q}]}}
`, beAddr))
	if got := legacyPing(t, addr, []byte{0xfe, 0x01}); got != "§1\x000\x00tidegate\x00Unknown host\x000\x000" {
		t.Fatalf("1.4 ping without a default group: %q", got)
	}
	ping := mc.AppendLegacyPing(nil, mc.LegacyPing{Kind: mc.LegacyPing16, Protocol: 74, Host: "nope.example", Port: 25565})
	if got := legacyPing(t, addr, ping); got != "§1\x0074\x00tidegate\x00Unknown host\x000\x000" {
		t.Fatalf("1.6 ping for an unknown host: %q", got)
	}
}

// TestStatusCacheReload: a reload gives the groups a new cache, so a
// changed offline reply or backend shows at once.
func TestStatusCacheReload(t *testing.T) {
	_, aAddr := startBackendServer(t, mcbackend.Config{StatusDescription: "A"})
	_, bAddr := startBackendServer(t, mcbackend.Config{StatusDescription: "B"})
	p, addr := startProxy(t, mcConfig(aAddr, "status: {cache_ttl: 1h}"))
	if st := goMCPing(t, addr); string(st.Description) != `{"text":"A"}` {
		t.Fatalf("before the reload: %s", st.Description)
	}
	cfg := p.cur().cfg
	next := *cfg
	next.Groups = map[string]config.GroupConfig{"main": {Backends: []config.BackendConfig{{Addr: bAddr, Weight: 1}}}}
	if err := p.Reload(&next); err != nil {
		t.Fatal(err)
	}
	if st := goMCPing(t, addr); string(st.Description) != `{"text":"B"}` {
		t.Fatalf("after the reload: %s", st.Description)
	}
}
