package proxy

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// fakeClock is the proxy's health clock in a test: cooldowns end only
// when the test advances it.
type fakeClock struct{ ns atomic.Int64 }

func installFakeClock(c *fakeClock) func(*Proxy) {
	c.ns.Store(nowUnix())
	return func(p *Proxy) { p.router.now = c.ns.Load }
}

func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// front is a Go relay (peers.GoRelay) on a fixed loopback address in front
// of target: down closes it, so connects there are refused, and up listens
// there again. It counts the connections it accepted.
type front struct {
	t        *testing.T
	addr     string
	target   string
	r        *peers.GoRelay
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
	r := &peers.GoRelay{Backend: f.target}
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
	f.accepted += f.r.Stats().Accepted
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
	return f.accepted + f.r.Stats().Accepted
}

// health returns the status of the backend at addr.
func health(t *testing.T, p *Proxy, addr string) BackendStatus {
	t.Helper()
	for _, b := range p.BackendHealth() {
		if b.Addr == addr {
			return b
		}
	}
	t.Fatalf("no backend %s in %+v", addr, p.BackendHealth())
	return BackendStatus{}
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
	offline := DefaultOfflineMessage

	loginsRefused(t, addr, "localhost", offline, "f1")
	if b := health(t, p, dead); !b.Up || b.ConnectFailures != 1 || b.Failures != 1 {
		t.Fatalf("after one failure: %+v", b)
	}
	loginsRefused(t, addr, "localhost", offline, "f2")
	b := health(t, p, dead)
	if b.Up || b.ConnectFailures != 2 || !b.DownUntil.Equal(time.Unix(0, clock.ns.Load()).Add(10*time.Second)) ||
		!strings.Contains(b.LastError, dead) {
		t.Fatalf("after two failures: %+v", b)
	}
	if got := p.GroupsDown(); !slices.Equal(got, []string{"main"}) {
		t.Fatalf("GroupsDown = %q", got)
	}

	loginsRefused(t, addr, "localhost", offline, "c1", "c2", "c3", "c4", "c5")
	checkOffline(t, statusPing(t, addr, "localhost", 763), 763, offline)
	if b := health(t, p, dead); b.ConnectFailures != 2 {
		t.Fatalf("dialled during the cooldown: %+v", b)
	}
	if n := p.Stats().Rejected["no_healthy_backend"]; n != 6 {
		t.Fatalf("no_healthy_backend counted %d times, want 6", n)
	}

	clock.advance(10 * time.Second)
	loginsRefused(t, addr, "localhost", offline, "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8")
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
	if err := reg.Register(NewCollector(p)); err != nil {
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
	login17(t, dial(t, addr), "localhost", "before")
	f.down()
	loginsRefused(t, addr, "localhost", DefaultOfflineMessage, "fail")
	if b := health(t, p, f.addr); b.Up {
		t.Fatalf("not marked down after a refused connect: %+v", b)
	}
	f.up()
	loginsRefused(t, addr, "localhost", DefaultOfflineMessage, "c1", "c2", "c3")
	if n := f.accepts(); n != 1 {
		t.Fatalf("backend accepted %d connections, want only the one before it went down", n)
	}
	clock.advance(time.Minute)
	login17(t, dial(t, addr), "localhost", "probe")
	if n, b := f.accepts(), health(t, p, f.addr); n != 2 || !b.Up || b.Failures != 0 {
		t.Fatalf("after the probe: %d accepts, %+v", n, b)
	}
	for _, name := range []string{"a1", "a2", "a3"} {
		login17(t, dial(t, addr), "localhost", name)
	}
	if n := f.accepts(); n != 5 {
		t.Fatalf("backend accepted %d connections, want 5", n)
	}
	waitFor(t, func() bool { return health(t, p, f.addr).Sessions == 4 })
}

// TestPickHandsOutOneProbe: goroutines picking together after a cooldown
// get exactly one probe; a lost probe is taken over after its lease; a
// dropped probe lets the next pick probe at once.
func TestPickHandsOutOneProbe(t *testing.T) {
	g := &group{name: "g"}
	b := &backend{addr: "a", weight: 1, group: g}
	g.backends = []*backend{b}
	h := HealthConfig{Failures: 1, Cooldown: time.Second}
	const lease = int64(time.Minute)
	now := nowUnix()
	if !b.markFailed(h, now, false) {
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
				if got, probe := g.pick(&rnd, now+int64(time.Second), lease); probe {
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
	if _, probe := g.pick(&rnd, later-1, lease); probe {
		t.Fatal("a second probe before the lease ended")
	}
	if _, probe := g.pick(&rnd, later, lease); !probe {
		t.Fatal("an undecided probe was not taken over after its lease")
	}
	b.dropProbe(later)
	if _, probe := g.pick(&rnd, later, lease); !probe {
		t.Fatal("a dropped probe was not handed out again")
	}
	if !b.markFailed(h, later, true) || b.state.Load() != later+int64(time.Second) {
		t.Fatalf("a failed probe did not start another cooldown: state %d", b.state.Load())
	}
	if !b.markUp() || b.markUp() {
		t.Fatal("markUp must report the change to up once")
	}
	if got, probe := g.pick(&rnd, later, lease); got != b || probe {
		t.Fatal("an up backend is not picked normally")
	}
}

// TestOfflineAnswers: a status ping whose backend connect fails, and one to
// a group with no backend up, get the proxy's own answer with the group's
// offline message (and a third-party client reads it); a login gets that
// message as its disconnect.
func TestOfflineAnswers(t *testing.T) {
	dead := refusedAddr(t)
	const msg = `Survival is "down" for maintenance`
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: survival
groups: {survival: {backends: [{addr: %q}], offline_message: %q}}
health: {failures: 2, cooldown: 1h}
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
	for check, want := range map[string]CheckKind{"": CheckTCP, "health: {check: status}": CheckStatus} {
		cfg, err := ParseConfig([]byte(text + check))
		if err != nil {
			t.Fatal(err)
		}
		r := newRouter(cfg)
		for name, g := range r.groups {
			if g.routed != (name == "a") || g.check != want {
				t.Errorf("%q: group %s routed %v check %s; want routed %v check %s", check, name, g.routed, g.check, name == "a", want)
			}
		}
	}
}

func TestHealthConfigValidation(t *testing.T) {
	_, err := ParseConfig([]byte(`
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
		"health.interval: -1s must be positive", "health.timeout: -2s must be positive",
		`health.check: "ping": want auto, tcp or status`, "health.offline_message: 1025 bytes: want at most 1024",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %s:\n%v", want, err)
		}
	}
	cfg, err := ParseConfig([]byte(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: g
groups: {g: {backends: [{addr: "127.0.0.1:1"}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if h := cfg.Health; h.Interval != 0 || h.Timeout != 2*time.Second || h.Check != CheckAuto || h.OfflineMessage != DefaultOfflineMessage {
		t.Fatalf("health defaults %+v", h)
	}
}
