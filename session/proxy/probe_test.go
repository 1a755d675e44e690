package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
	"github.com/tidegate/tidegate/session/proxy/status"
)

// fakeClock is the proxy's health clock in a test: cooldowns end only
// when the test advances it.
type fakeClock struct{ ns atomic.Int64 }

func installFakeClock(c *fakeClock) func(*Proxy) {
	c.ns.Store(nowUnix())
	return func(p *Proxy) { p.cur().router.now = c.ns.Load }
}

func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// front is a relay (testRelay) on a fixed loopback address in front
// of target: down closes it, so connects there are refused, and up listens
// there again. It counts the connections it accepted.
type front struct {
	t        *testing.T
	addr     string
	target   string
	r        *testRelay
	served   chan error
	accepted int64 // by relays already closed
}

func startFront(t *testing.T, target string) *front {
	f := &front{t: t, addr: "127.0.0.1:0", target: target}
	f.up()
	f.addr = f.r.Addr().String()
	t.Cleanup(f.down)
	return f
}

func (f *front) up() {
	f.t.Helper()
	r := &testRelay{target: f.target}
	if err := r.Listen(f.addr); err != nil {
		f.t.Fatal(err)
	}
	f.r, f.served = r, make(chan error, 1)
	go func() { f.served <- r.Serve() }()
}

func (f *front) down() {
	if f.r == nil {
		return
	}
	f.accepted += f.r.accepted.Load()
	_ = f.r.Close()
	if err := <-f.served; err != nil {
		f.t.Errorf("relay in front of %s: %v", f.target, err)
	}
	f.r = nil
}

func (f *front) accepts() int64 {
	if f.r == nil {
		return f.accepted
	}
	return f.accepted + f.r.accepted.Load()
}

// testRelay is a plain TCP relay: each connection it accepts is copied
// both ways to target, a goroutine per direction, and closed with its
// other side.
type testRelay struct {
	target   string
	ln       net.Listener
	accepted atomic.Int64

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// Listen binds addr.
func (r *testRelay) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("relay listening on %s: %w", addr, err)
	}
	r.ln, r.conns = ln, map[net.Conn]struct{}{}
	return nil
}

// Addr is the bound address.
func (r *testRelay) Addr() net.Addr { return r.ln.Addr() }

// Serve relays what it accepts until Close, when it returns nil.
func (r *testRelay) Serve() error {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			r.mu.Lock()
			closed := r.closed
			r.mu.Unlock()
			if closed {
				return nil
			}
			return fmt.Errorf("relay accepting: %w", err)
		}
		r.accepted.Add(1)
		if !r.track(c) {
			continue
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.session(c)
		}()
	}
}

// track adds c to the connections Close closes; false (c closed) once
// Close has begun.
func (r *testRelay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		_ = c.Close()
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *testRelay) session(client net.Conn) {
	defer client.Close()
	backend, err := net.DialTimeout("tcp", r.target, 5*time.Second)
	if err != nil || !r.track(backend) {
		return
	}
	defer backend.Close()
	done := make(chan struct{}, 2)
	for _, pair := range [][2]net.Conn{{backend, client}, {client, backend}} {
		go func() {
			_, _ = io.Copy(pair[0], pair[1])
			_ = pair[0].Close()
			_ = pair[1].Close()
			done <- struct{}{}
		}()
	}
	<-done
	<-done
}

// Close stops accepting, closes every connection and waits for the
// sessions to end.
func (r *testRelay) Close() error {
	r.mu.Lock()
	r.closed = true
	err := r.ln.Close()
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

// health returns the status of the backend at addr.
func health(t *testing.T, p *Proxy, addr string) admin.BackendStatus {
	t.Helper()
	for _, b := range p.BackendHealth() {
		if b.Addr == addr {
			return b
		}
	}
	t.Fatalf("no backend %s in %+v", addr, p.BackendHealth())
	return admin.BackendStatus{}
}

// startLogins opens one connection per name and sends each a 1.20.2
// handshake and Login Start at once, so the proxy handles them together.
func startLogins(t *testing.T, addr, host string, names ...string) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, len(names))
	for i := range conns {
		conns[i] = dial(t, addr)
	}
	for i, c := range conns {
		if _, err := c.Write(append(handshake(mc.Protocol1_20_2, host, mc.NextStateLogin), loginStart(names[i])...)); err != nil {
			t.Fatal(err)
		}
	}
	return conns
}

// readDisconnect reads the login Disconnect the proxy sends and returns its JSON.
func readDisconnect(t *testing.T, c net.Conn) string {
	t.Helper()
	id, data := readPacket(t, c)
	if id != mc.PacketLoginDisconnect {
		t.Fatalf("want a login disconnect, got packet %#x %q", id, data)
	}
	return string(stringField(t, data))
}

// stringField decodes packet data that is one protocol string.
func stringField(t *testing.T, data []byte) []byte {
	t.Helper()
	r := mc.NewReader(data)
	s, err := r.ReadString(1 << 20)
	if err != nil || r.Remaining() != 0 {
		t.Fatalf("packet data %q is not one string: %v", data, err)
	}
	return s
}

// loginsRefused logs in once per name, together, and checks that each gets
// a disconnect saying want.
func loginsRefused(t *testing.T, addr, host, want string, names ...string) {
	t.Helper()
	for _, c := range startLogins(t, addr, host, names...) {
		if js := readDisconnect(t, c); !strings.Contains(js, want) {
			t.Fatalf("disconnect %s does not say %q", js, want)
		}
	}
}

// localStatus is the JSON of the proxy's own status answer.
type localStatus struct {
	Version struct {
		Name     string
		Protocol int32
	}
	Players struct {
		Max, Online int
	}
	Description struct {
		Text string
	}
}

// statusPing pings addr for host and returns the Status Response after
// checking that the Pong echoes the Ping.
func statusPing(t *testing.T, addr, host string, protocol int32) localStatus {
	t.Helper()
	c := dial(t, addr)
	msg := append(handshake(protocol, host, mc.NextStateStatus), mc.AppendPacket(nil, mc.PacketStatusRequest, nil)...)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	id, data := readPacket(t, c)
	if id != mc.PacketStatusResponse {
		t.Fatalf("status response: packet %#x %q", id, data)
	}
	js := stringField(t, data)
	var st localStatus
	if err := json.Unmarshal(js, &st); err != nil {
		t.Fatalf("status JSON %s: %v", js, err)
	}
	payload := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	if _, err := c.Write(mc.AppendPacket(nil, mc.PacketPing, payload)); err != nil {
		t.Fatal(err)
	}
	if id, data := readPacket(t, c); id != mc.PacketPong || string(data) != string(payload) {
		t.Fatalf("pong: packet %#x %x", id, data)
	}
	return st
}

func checkOffline(t *testing.T, st localStatus, protocol int32, text string) {
	t.Helper()
	if st.Version.Name != "tidegate" || st.Version.Protocol != protocol || st.Players.Max != 0 ||
		st.Players.Online != 0 || st.Description.Text != text {
		t.Fatalf("local status %+v, want tidegate, protocol %d, 0 players, %q", st, protocol, text)
	}
}

// TestBreakerRefusesDuringCooldownThenProbesOnce: a backend that refuses
// connects is marked down after health.failures failures; during its
// cooldown no session dials it (its connect failures stay put) and logins
// get the offline message; after the cooldown, of eight logins arriving
// together exactly one dials it, and its failure starts another cooldown.
func TestBreakerRefusesDuringCooldownThenProbesOnce(t *testing.T) {
	dead := refusedAddr(t)
	var clock fakeClock
	p, addr := startProxy(t, mcConfig(dead, "health: {failures: 2, cooldown: 10s}"), installFakeClock(&clock))
	offline := config.DefaultOfflineMessage

	loginsRefused(t, addr, "localhost", offline, "user_f1")
	if b := health(t, p, dead); !b.Up || b.ConnectFailures != 1 || b.Failures != 1 {
		t.Fatalf("after one failure: %+v", b)
	}
	loginsRefused(t, addr, "localhost", offline, "user_f2")
	b := health(t, p, dead)
	if b.Up || b.ConnectFailures != 2 || !b.DownUntil.Equal(time.Unix(0, clock.ns.Load()).Add(10*time.Second)) ||
		!strings.Contains(b.LastError, dead) {
		t.Fatalf("after two failures: %+v", b)
	}
	if got := p.GroupsDown(); !slices.Equal(got, []string{"main"}) {
		t.Fatalf("GroupsDown = %q", got)
	}

	loginsRefused(t, addr, "localhost", offline, "user_c1", "user_c2", "user_c3", "user_c4", "user_c5")
	checkOffline(t, statusPing(t, addr, "localhost", 763), 763, offline)
	if b := health(t, p, dead); b.ConnectFailures != 2 {
		t.Fatalf("dialled during the cooldown: %+v", b)
	}
	if n := p.Stats().Rejected["no_healthy_backend"]; n != 6 {
		t.Fatalf("no_healthy_backend counted %d times, want 6", n)
	}

	clock.advance(10 * time.Second)
	loginsRefused(t, addr, "localhost", offline, "user_p1", "user_p2", "user_p3", "user_p4", "user_p5", "user_p6", "user_p7", "user_p8")
	b = health(t, p, dead)
	if b.ConnectFailures != 3 || b.Up || b.Probing || !b.DownUntil.Equal(time.Unix(0, clock.ns.Load()).Add(10*time.Second)) {
		t.Fatalf("after the cooldown, want one failed probe and another cooldown: %+v", b)
	}
	st := p.Stats()
	if st.Rejected["backend_unavailable"] != 3 || st.Rejected["no_healthy_backend"] != 13 || st.ConnectFailed != 3 {
		t.Fatalf("rejections %v, connect failures %d", st.Rejected, st.ConnectFailed)
	}
	compareMetrics(t, p, fmt.Sprintf(`
# HELP tidegate_proxy_backend_connect_failures_total Backend connects of sessions that failed or timed out, by backend.
# TYPE tidegate_proxy_backend_connect_failures_total counter
tidegate_proxy_backend_connect_failures_total{addr=%[1]q,group="main"} 3
# HELP tidegate_proxy_backend_up 1 when the backend may get sessions, 0 while it is down or being probed.
# TYPE tidegate_proxy_backend_up gauge
tidegate_proxy_backend_up{addr=%[1]q,group="main"} 0
`, dead), "tidegate_proxy_backend_connect_failures_total", "tidegate_proxy_backend_up")
}

// compareMetrics compares the named metric families of p's collector,
// registered on a pedantic registry, with want.
func compareMetrics(t *testing.T, p *Proxy, want string, names ...string) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(proxymetrics.NewCollector(p)); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}

// TestBreakerProbeSuccessBringsBackendBack counts accepts on the backend's
// address: none during the cooldown, one (the probe) at the first login
// after it, which joins and brings the backend up for the logins after it.
func TestBreakerProbeSuccessBringsBackendBack(t *testing.T) {
	f := startFront(t, startBackend(t, mcbackend.Config{}))
	var clock fakeClock
	p, addr := startProxy(t, mcConfig(f.addr, "health: {failures: 1, cooldown: 1m}"), installFakeClock(&clock))
	before := dial(t, addr)
	login17(t, before, "localhost", "before")
	f.down()
	// The backend's close reaches the client as a half-close; the session
	// ends when the client closes too.
	before.Close()
	loginsRefused(t, addr, "localhost", config.DefaultOfflineMessage, "fail")
	if b := health(t, p, f.addr); b.Up {
		t.Fatalf("not marked down after a refused connect: %+v", b)
	}
	f.up()
	loginsRefused(t, addr, "localhost", config.DefaultOfflineMessage, "user_c1", "user_c2", "user_c3")
	if n := f.accepts(); n != 1 {
		t.Fatalf("backend accepted %d connections, want only the one before it went down", n)
	}
	clock.advance(time.Minute)
	login17(t, dial(t, addr), "localhost", "probe")
	if n, b := f.accepts(), health(t, p, f.addr); n != 2 || !b.Up || b.Failures != 0 {
		t.Fatalf("after the probe: %d accepts, %+v", n, b)
	}
	for _, name := range []string{"user_a1", "user_a2", "user_a3"} {
		login17(t, dial(t, addr), "localhost", name)
	}
	if n := f.accepts(); n != 5 {
		t.Fatalf("backend accepted %d connections, want 5", n)
	}
	waitfor.For(t, "4 sessions on the backend", func() bool { return health(t, p, f.addr).Sessions == 4 })
}

// TestPickHandsOutOneProbe: goroutines picking together after a cooldown
// get exactly one probe; a lost probe is taken over after its lease; a
// dropped probe lets the next pick probe at once.
func TestPickHandsOutOneProbe(t *testing.T) {
	g := &group{name: "g"}
	b := &backend{addr: "a", weight: 1, group: g, backendHealth: &backendHealth{}}
	g.backends = []*backend{b}
	h := config.ProbeConfig{Failures: 1, Cooldown: time.Second}
	const lease = int64(time.Minute)
	now := nowUnix()
	if !b.MarkFailed(h, now, false) {
		t.Fatal("not marked down")
	}
	var probes, picks atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := uint64(i + 1)
			for range 100 {
				if got, probe := g.pick(&rnd, 0, now+int64(time.Second), lease); probe {
					probes.Add(1)
				} else if got != nil {
					picks.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if probes.Load() != 1 || picks.Load() != 0 {
		t.Fatalf("%d probes and %d picks, want 1 and 0", probes.Load(), picks.Load())
	}
	rnd := uint64(1)
	later := now + int64(time.Second) + lease
	if _, probe := g.pick(&rnd, 0, later-1, lease); probe {
		t.Fatal("a second probe before the lease ended")
	}
	if _, probe := g.pick(&rnd, 0, later, lease); !probe {
		t.Fatal("an undecided probe was not taken over after its lease")
	}
	b.DropProbe(later)
	if _, probe := g.pick(&rnd, 0, later, lease); !probe {
		t.Fatal("a dropped probe was not handed out again")
	}
	if !b.MarkFailed(h, later, true) || !b.Status("g", "a").DownUntil.Equal(time.Unix(0, later+int64(time.Second))) {
		t.Fatalf("a failed probe did not start another cooldown: %+v", b.Status("g", "a"))
	}
	if !b.MarkUp() || b.MarkUp() {
		t.Fatal("MarkUp must report the change to up once")
	}
	if got, probe := g.pick(&rnd, 0, later, lease); got != b || probe {
		t.Fatal("an up backend is not picked normally")
	}
}

// TestActiveChecksFollowBackend: active checks, tcp for a raw listener's
// group and a Minecraft status ping for a minecraft group (auto), mark a
// backend down when it stops answering and up when it is back, recording
// latency; a listener that accepts but does not speak Minecraft fails the
// status check.
func TestActiveChecksFollowBackend(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	for _, tc := range []struct {
		kind config.ProbeKind
		cfg  func(addr string) string
	}{
		{config.ProbeTCP, rawConfig},
		{config.ProbeStatus, func(addr string) string { return mcConfig(addr, "") }},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			f := startFront(t, be)
			p, _ := startProxy(t, tc.cfg(f.addr)+"\nhealth: {interval: 20ms, timeout: 1s, failures: 2, cooldown: 1h}\n")
			if k := p.cur().router.groups["main"].probeKind; k != tc.kind {
				t.Fatalf("auto check kind %s, want %s", k, tc.kind)
			}
			waitfor.For(t, "two passing checks with a latency", func() bool { b := health(t, p, f.addr); return b.ProbesOK >= 2 && b.Latency > 0 && b.LatencyEWMA > 0 })
			f.down()
			waitfor.For(t, "the backend marked down", func() bool { return !health(t, p, f.addr).Up })
			b := health(t, p, f.addr)
			if b.ProbesFailed < 2 || !strings.Contains(b.LastError, "refused") || !slices.Equal(p.GroupsDown(), []string{"main"}) {
				t.Fatalf("down: %+v, groups down %q", b, p.GroupsDown())
			}
			f.up()
			waitfor.For(t, "the backend marked up", func() bool { return health(t, p, f.addr).Up })
			if b := health(t, p, f.addr); b.Latency <= 0 || len(p.GroupsDown()) != 0 {
				t.Fatalf("back up: %+v, groups down %q", b, p.GroupsDown())
			}
		})
	}
	t.Run("status from a mute listener", func(t *testing.T) {
		mute, _ := muteListener(t)
		p, _ := startProxy(t, mcConfig(mute, "health: {interval: 20ms, timeout: 200ms, failures: 1, cooldown: 1h}"))
		waitfor.For(t, "the mute backend marked down", func() bool { return !health(t, p, mute).Up })
		if b := health(t, p, mute); b.ProbesOK != 0 || !strings.Contains(b.LastError, "status check of "+mute) {
			t.Fatalf("mute backend: %+v", b)
		}
	})
}

// muteListener accepts connections and never writes; it returns its
// address and the number of connections it accepted.
func muteListener(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var accepted atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			accepted.Add(1)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String(), &accepted
}

// TestOfflineAnswers: with the status cache off (status pings relayed), a
// status ping whose backend connect fails, and one to a group with no
// backend up, get the proxy's own answer with the group's offline message
// (and a third-party client reads it); a login gets that message as its
// disconnect. TestStatusCacheOffline covers the cached path.
func TestOfflineAnswers(t *testing.T) {
	dead := refusedAddr(t)
	const msg = `Survival is "down" for maintenance`
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: survival
groups: {survival: {backends: [{addr: %q}], offline_message: %q}}
health: {failures: 2, cooldown: 1h}
status: {cache_ttl: 0}
`, dead, msg))
	for _, proto := range []int32{mc.Protocol1_7_10, mc.Protocol1_20_2} { // both connects fail: down
		checkOffline(t, statusPing(t, addr, "localhost", proto), proto, msg)
	}
	checkOffline(t, statusPing(t, addr, "localhost", 766), 766, msg) // no backend up
	data, _, err := bot.PingAndListTimeout(addr, 5*time.Second)
	if err != nil {
		t.Fatalf("go-mc status ping of an offline group: %v", err)
	}
	var st localStatus
	if err := json.Unmarshal(data, &st); err != nil || st.Description.Text != msg {
		t.Fatalf("go-mc got %s (%v)", data, err)
	}
	want, _ := json.Marshal(map[string]string{"text": msg})
	for _, c := range startLogins(t, addr, "localhost", "Steve") {
		if js := readDisconnect(t, c); js != string(want) {
			t.Fatalf("disconnect %s, want %s", js, want)
		}
	}
	if r := p.Stats().Rejected; r["backend_unavailable"] != 2 || r["no_healthy_backend"] != 3 {
		t.Fatalf("rejections %v, want 2 backend_unavailable and 3 no_healthy_backend", r)
	}
}

// TestGroupsDownListsRoutedGroupsWithoutBackends: every group some listener
// reaches and with no backend up is listed, and only those; a group no
// listener reaches is not, nor one with a backend up.
func TestGroupsDownListsRoutedGroupsWithoutBackends(t *testing.T) {
	live := startBackend(t, mcbackend.Config{})
	dead := refusedAddr(t)
	p, _ := startProxy(t, fmt.Sprintf(`
listeners:
  - {listen: "127.0.0.1:0"}
  - {listen: "127.0.0.2:0", mode: raw, group: relay}
default_group: lobby
routes:
  - {hosts: [survival.example], group: survival}
  - {hosts: [creative.example], group: creative}
groups:
  lobby: {backends: [{addr: %[2]q}]}
  survival: {backends: [{addr: %[1]q}, {addr: %[2]q}]}
  creative: {backends: [{addr: %[2]q}]}
  relay: {backends: [{addr: %[2]q}]}
  spare: {backends: [{addr: %[2]q}]}
  live: {backends: [{addr: %[1]q}]}
health: {interval: 20ms, timeout: 1s, failures: 1, cooldown: 1h}
`, live, dead))
	waitfor.For(t, "every backend checked, the dead one down", func() bool {
		for _, b := range p.BackendHealth() {
			if b.Up == (b.Addr == dead) || b.ProbesOK+b.ProbesFailed == 0 {
				return false
			}
		}
		return true
	})
	if got, want := p.GroupsDown(), []string{"creative", "lobby", "relay"}; !slices.Equal(got, want) {
		t.Fatalf("GroupsDown = %q, want %q", got, want)
	}
	kinds := map[string]config.ProbeKind{}
	for name, g := range p.cur().router.groups {
		kinds[name] = g.probeKind
	}
	want := map[string]config.ProbeKind{"lobby": config.ProbeStatus, "survival": config.ProbeStatus, "creative": config.ProbeStatus,
		"relay": config.ProbeTCP, "spare": config.ProbeTCP, "live": config.ProbeTCP}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("check kinds %v, want %v", kinds, want)
	}
}

// TestRoutesOfRawOnlyProxyCarryNoTraffic: without a minecraft listener the
// default group and the routes reach nothing, so they are not checked by
// status and not reported down; health.check overrides auto.
func TestRoutesOfRawOnlyProxyCarryNoTraffic(t *testing.T) {
	text := `
listeners: [{listen: "127.0.0.1:0", mode: raw, group: a}]
default_group: b
routes: [{hosts: [c.example], group: c}]
groups: {a: {backends: [{addr: "127.0.0.1:1"}]}, b: {backends: [{addr: "127.0.0.1:1"}]}, c: {backends: [{addr: "127.0.0.1:1"}]}}
`
	for check, want := range map[string]config.ProbeKind{"": config.ProbeTCP, "health: {check: status}": config.ProbeStatus} {
		cfg, err := parseConfig([]byte(text + check))
		if err != nil {
			t.Fatal(err)
		}
		r := newRouter(cfg, nil, 1)
		for name, g := range r.groups {
			if g.routed != (name == "a") || g.probeKind != want {
				t.Errorf("%q: group %s routed %v check %s; want routed %v check %s", check, name, g.routed, g.probeKind, name == "a", want)
			}
		}
	}
}

// TestBackendMetrics: the per-backend series carry group and addr labels
// and pass a pedantic registry; latency is exported once a check passed.
func TestBackendMetrics(t *testing.T) {
	live := startBackend(t, mcbackend.Config{})
	dead := refusedAddr(t)
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: main
routes: [{hosts: [gone.example], group: gone}]
groups: {main: {backends: [{addr: %q}]}, gone: {backends: [{addr: %q}]}}
health: {interval: 20ms, timeout: 1s, failures: 1, cooldown: 1h}
`, live, dead))
	waitfor.For(t, "the dead backend down and the live one measured", func() bool { return !health(t, p, dead).Up && health(t, p, live).Latency > 0 })
	login17(t, dial(t, addr), "localhost", "Metrics")
	loginsRefused(t, addr, "gone.example", config.DefaultOfflineMessage, "Nobody")
	waitfor.For(t, "the session on the live backend", func() bool { return health(t, p, live).Sessions == 1 })
	compareMetrics(t, p, fmt.Sprintf(`
# HELP tidegate_proxy_backend_connect_failures_total Backend connects of sessions that failed or timed out, by backend.
# TYPE tidegate_proxy_backend_connect_failures_total counter
tidegate_proxy_backend_connect_failures_total{addr=%[2]q,group="gone"} 0
tidegate_proxy_backend_connect_failures_total{addr=%[1]q,group="main"} 0
# HELP tidegate_proxy_backend_sessions Sessions relayed to the backend now.
# TYPE tidegate_proxy_backend_sessions gauge
tidegate_proxy_backend_sessions{addr=%[2]q,group="gone"} 0
tidegate_proxy_backend_sessions{addr=%[1]q,group="main"} 1
# HELP tidegate_proxy_backend_up 1 when the backend may get sessions, 0 while it is down or being probed.
# TYPE tidegate_proxy_backend_up gauge
tidegate_proxy_backend_up{addr=%[2]q,group="gone"} 0
tidegate_proxy_backend_up{addr=%[1]q,group="main"} 1
`, live, dead), "tidegate_proxy_backend_connect_failures_total", "tidegate_proxy_backend_sessions", "tidegate_proxy_backend_up")

	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(proxymetrics.NewCollector(p)); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			key := mf.GetName()
			for _, l := range m.Label {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			series[key] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	for key, positive := range map[string]bool{
		"tidegate_proxy_backend_checks_total addr=" + live + " group=main result=ok":     true,
		"tidegate_proxy_backend_checks_total addr=" + live + " group=main result=failed": false,
		"tidegate_proxy_backend_checks_total addr=" + dead + " group=gone result=ok":     false,
		"tidegate_proxy_backend_checks_total addr=" + dead + " group=gone result=failed": true,
		"tidegate_proxy_backend_check_latency_seconds addr=" + live + " group=main":      true,
	} {
		v, ok := series[key]
		if !ok || (v > 0) != positive {
			t.Errorf("%s = %v (present %v), want positive %v", key, v, ok, positive)
		}
	}
	if _, ok := series["tidegate_proxy_backend_check_latency_seconds addr="+dead+" group=gone"]; ok {
		t.Error("latency exported for a backend that never passed a check")
	}
}

// TestStopEndsChecksInFlight: Stop does not wait out a status check's
// timeout, and leaves no checker goroutine behind.
func TestStopEndsChecksInFlight(t *testing.T) {
	mute, accepted := muteListener(t)
	p, _ := startProxy(t, mcConfig(mute, "health: {interval: 1m, timeout: 1m}"))
	waitfor.For(t, "the first check's connection", func() bool { return accepted.Load() == 1 }) // the first check waits for an answer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop with a check in flight: %v", err)
	}
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "probeLoop") {
		t.Fatalf("a checker outlived Stop:\n%s", stacks)
	}
	if b := health(t, p, mute); b.ProbesFailed != 0 {
		t.Fatalf("a check cut short by Stop was counted as failed: %+v", b)
	}
}

func TestHealthConfigValidation(t *testing.T) {
	_, err := parseConfig([]byte(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: g
groups:
  g: {backends: [{addr: "127.0.0.1:1"}, {addr: "127.0.0.1:1"}], offline_message: "   "}
health: {interval: -1s, timeout: -2s, check: ping, offline_message: "` + strings.Repeat("x", 1025) + `"}
`))
	if err == nil {
		t.Fatal("invalid health config accepted")
	}
	for _, want := range []string{
		`groups.g.backends[1].addr: "127.0.0.1:1" is already backends[0]`, `groups.g.offline_message: "   " is blank`,
		"health.interval: -1s is negative (0 turns it off)", "health.timeout: -2s must be positive",
		`health.check: "ping": want auto, tcp or status`, "health.offline_message: 1025 bytes: want at most 1024",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %s:\n%v", want, err)
		}
	}
	cfg, err := parseConfig([]byte(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: g
groups: {g: {backends: [{addr: "127.0.0.1:1"}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if h := cfg.Probes; h.Interval != 0 || h.Timeout != 2*time.Second || h.Kind != config.ProbeAuto || h.OfflineMessage != config.DefaultOfflineMessage {
		t.Fatalf("health defaults %+v", h)
	}
}

// TestStatusFetchErrorNamesTheAddressOnce: the status cache's refresh
// reports a failed connect with net's error alone, which names the address.
func TestStatusFetchErrorNamesTheAddressOnce(t *testing.T) {
	addr := refusedAddr(t)
	_, err := status.Fetch(t.Context(), addr, time.Second)
	if err == nil {
		t.Fatalf("a status fetch from %s, where nothing listens, succeeded", addr)
	}
	if n := strings.Count(err.Error(), addr); n != 1 || !strings.HasPrefix(err.Error(), "status: ") {
		t.Fatalf("%q names %s %d times; want once, after \"status: \"", err, addr, n)
	}
}
