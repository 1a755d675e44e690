package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
	"github.com/tidegate/tidegate/session/proxy/ratelimit"
	"github.com/tidegate/tidegate/session/proxy/reasons"

	"github.com/rs/zerolog"
)

func testLoggerTo(w io.Writer) zerolog.Logger { return zerolog.New(w).Level(zerolog.InfoLevel) }

// TestAdmissionDoesNotAllocate: admitting and releasing a connection from
// an address already tracked allocates nothing.
func TestAdmissionDoesNotAllocate(t *testing.T) {
	cfg, err := parseConfig([]byte(mcConfig("127.0.0.1:1", "")))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Limits.ConnectionRate, cfg.Limits.ConnectionBurst = 1e6, 1_000_000
	cfg.Limits.SubnetConnectionRate, cfg.Limits.SubnetConnectionBurst = 1e6, 1_000_000 // both buckets are taken from
	p := &Proxy{src: ratelimit.New()}
	gen := &generation{cfg: cfg}
	for _, ip := range []string{"203.0.113.9", "2001:db8::9"} {
		p.src.Admit(&gen.cfg.Limits, ip)
		p.src.Release(&gen.cfg.Limits, ip)
		if n := testing.AllocsPerRun(1000, func() {
			if _, ok := p.src.Admit(&gen.cfg.Limits, ip); !ok {
				t.Fatal("refused")
			}
			p.src.Release(&gen.cfg.Limits, ip)
			p.src.AdmitLogin(&gen.cfg.Limits, ip)
		}); n != 0 {
			t.Errorf("%s: admission allocates %v times", ip, n)
		}
	}
}

// limiterClock sets the limiter's clock to c (fakeClock of health_test.go),
// which then moves only when the test advances it.
func limiterClock(c *fakeClock) func(p *Proxy) {
	c.ns.Store(int64(time.Hour))
	return func(p *Proxy) { p.src.SetClock(c.ns.Load) }
}

// refusedAtAccept reports whether p reset a new connection without
// reading anything from it.
func refusedAtAccept(t *testing.T, p *Proxy, addr string) bool {
	t.Helper()
	return countRefused(t, p, addr, 1) == 1
}

// countRefused opens n connections at once and returns how many of them
// p reset at accept; the others stay open, waiting for a handshake. It
// waits until p has handled all n, so that a reset under way on a loaded
// machine is not taken for an open connection.
func countRefused(t *testing.T, p *Proxy, addr string, n int) int {
	t.Helper()
	return countRefusedFrom(t, p, addr, make([]string, n))
}

// countRefusedFrom is countRefused with one connection from each of the
// source addresses from ("" for the default).
func countRefusedFrom(t *testing.T, p *Proxy, addr string, from []string) int {
	t.Helper()
	n := len(from)
	before := p.Stats().Accepted // counts the ones refused at accept too
	conns := make([]net.Conn, n)
	for i := range conns {
		if from[i] == "" {
			conns[i] = dial(t, addr)
			continue
		}
		d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from[i])}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dialing from %s: %v", from[i], err)
		}
		t.Cleanup(func() { _ = c.Close() })
		conns[i] = c
	}
	waitStats(t, p, fmt.Sprintf("%d new connections handled", n), func(st proxymetrics.Stats) bool { return st.Accepted >= before+int64(n) })
	refused := 0
	for _, c := range conns {
		// The reset follows the count within the same callback; a read past its
		// deadline fails before it looks at the socket, so each read gets
		// its own deadline (a reset one answers at once).
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		switch {
		case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF):
			refused++
		case errors.As(err, &ne) && ne.Timeout():
		default:
			t.Fatalf("reading a new connection: %v", err)
		}
	}
	return refused
}

// TestConnectionRateRefusesAtAccept: past its burst an address's new
// connections are reset at accept and counted as connection_rate, until
// the bucket refills; sessions already open are untouched, and the buckets
// survive a reload.
func TestConnectionRateRefusesAtAccept(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	var clk fakeClock
	text := mcConfig(be, "limits: {connection_rate: 1, connection_burst: 3}")
	p, addr := startProxy(t, text, limiterClock(&clk))
	held := dial(t, addr)
	login17(t, held, "localhost", "Held")
	if n := countRefused(t, p, addr, 2); n != 0 {
		t.Fatalf("%d connections of the burst of 3 refused", n)
	}
	waitStats(t, p, "3 accepted connections", func(st proxymetrics.Stats) bool { return st.Accepted == 3 })
	if !refusedAtAccept(t, p, addr) {
		t.Fatal("the 4th connection within the burst was not refused")
	}
	waitStats(t, p, "the connection_rate refusal", func(st proxymetrics.Stats) bool { return st.Rejected["connection_rate"] == 1 })
	echo(t, held, []byte("still relaying"))

	cfg, err := testParseConfig(t, text)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Loops = 2
	if err := p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if !refusedAtAccept(t, p, addr) {
		t.Fatal("a reload refilled the bucket")
	}
	clk.advance(time.Second)
	if refusedAtAccept(t, p, addr) {
		t.Fatal("refused a second after the burst at 1/s")
	}
	if n := p.Stats().Rejected["connection_rate"]; n != 2 {
		t.Fatalf("connection_rate counted %d, want 2", n)
	}
}

// TestLoginRateDisconnects: past its burst an address's logins get a
// disconnect message and are counted as login_rate; status pings are not
// logins.
func TestLoginRateDisconnects(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	var clk fakeClock
	p, addr := startProxy(t, mcConfig(be, "limits: {login_rate: 0.5, login_burst: 2}"), limiterClock(&clk))
	login17(t, dial(t, addr), "localhost", "One")
	login17(t, dial(t, addr), "localhost", "Two")
	for range 3 { // status pings take no login token
		c := dial(t, addr)
		if _, err := c.Write(append(handshake(mc.Protocol1_20_2, "localhost", mc.NextStateStatus), mc.AppendPacket(nil, mc.PacketStatusRequest, nil)...)); err != nil {
			t.Fatal(err)
		}
		if id, _ := readPacket(t, c); id != mc.PacketStatusResponse {
			t.Fatalf("status ping answered with %#x", id)
		}
	}
	c := dial(t, addr)
	if _, err := c.Write(append(handshake(mc.Protocol1_7_10, "localhost", mc.NextStateLogin), loginStart("Three")...)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || !bytes.Contains(got, []byte("Too many logins")) {
		t.Fatalf("third login: %q, %v; want a disconnect saying Too many logins", got, err)
	}
	waitStats(t, p, "the login_rate refusal", func(st proxymetrics.Stats) bool { return st.Rejected["login_rate"] == 1 })
	clk.advance(2 * time.Second)
	login17(t, dial(t, addr), "localhost", "Four")
}

// TestSubnetCapRefusesAtAccept: a subnet at its cap has new connections
// reset and counted as max_sessions_per_subnet; a session that ends makes
// room again.
func TestSubnetCapRefusesAtAccept(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, mcConfig(be, "limits: {max_sessions_per_subnet: 2}"))
	a := dial(t, addr)
	login17(t, a, "localhost", "PlayerA")
	b := dial(t, addr)
	login17(t, b, "localhost", "PlayerB")
	if !refusedAtAccept(t, p, addr) {
		t.Fatal("a third session of 127.0.0.0/24 was admitted past the cap of 2")
	}
	waitStats(t, p, "the max_sessions_per_subnet refusal", func(st proxymetrics.Stats) bool { return st.Rejected["max_sessions_per_subnet"] == 1 })
	b.Close()
	waitStats(t, p, "one session left", func(st proxymetrics.Stats) bool { return st.Active == 1 })
	login17(t, dial(t, addr), "localhost", "PlayerC")
	echo(t, a, []byte("first session still fine"))
}

// TestDefaultLimitsThrottleABurst: with the default limits (no test
// override) a burst of connections from one address is cut after
// connection_burst.
func TestDefaultLimitsThrottleABurst(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	def := defaultLimits(t)
	p, addr := startProxy(t, mcConfig(be, fmt.Sprintf("limits: {connection_rate: %v, login_rate: %v, max_sessions_per_subnet: %d}",
		def.ConnectionRate, def.LoginRate, def.MaxSessionsPerSubnet)), limiterClock(&fakeClock{}))
	if refused := countRefused(t, p, addr, def.ConnectionBurst+5); refused != 5 {
		t.Fatalf("%d of %d connections refused, want 5 past the burst of %d", refused, def.ConnectionBurst+5, def.ConnectionBurst)
	}
	if n := p.Stats().Rejected["connection_rate"]; n != 5 {
		t.Fatalf("connection_rate counted %d", n)
	}
}

// TestRotatingAddressesAreRefusedBySubnet: the attack of issue #26, 20
// connections each from 127.0.0.2 to 127.0.0.51 (each address within its
// own burst), gets the default subnet burst admitted and the rest reset at
// accept, counted as connection_rate_subnet.
func TestRotatingAddressesAreRefusedBySubnet(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	def := defaultLimits(t)
	// A handshake timeout past the time 1,000 dials take on a loaded machine:
	// a connection the timeout closed would pass for one refused.
	p, addr := startProxy(t, mcConfig(be, fmt.Sprintf("limits: {handshake_timeout: 2m, connection_rate: %v, subnet_connection_rate: %v}",
		def.ConnectionRate, def.SubnetConnectionRate)), limiterClock(&fakeClock{}))
	var from []string
	for host := 2; host <= 51; host++ {
		for range 20 {
			from = append(from, fmt.Sprintf("127.0.0.%d", host))
		}
	}
	refused := countRefusedFrom(t, p, addr, from)
	if want := len(from) - def.SubnetConnectionBurst; refused != want {
		t.Fatalf("%d of %d connections from 50 addresses of one /24 refused, want %d (all past the subnet burst of %d)",
			refused, len(from), want, def.SubnetConnectionBurst)
	}
	st := p.Stats()
	if n := st.Rejected["connection_rate_subnet"]; n != int64(refused) || st.Rejected["connection_rate"] != 0 {
		t.Fatalf("refusals counted %v, want %d connection_rate_subnet and no connection_rate", st.Rejected, refused)
	}
}

// TestSubnetLoginRateDisconnects: logins from two addresses of one /24,
// each within its own burst, stop at the subnet's burst with a disconnect
// that names the network, counted as login_rate_subnet.
func TestSubnetLoginRateDisconnects(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	var clk fakeClock
	p, addr := startProxy(t, mcConfig(be, "limits: {login_rate: 0.01, login_burst: 2, subnet_login_rate: 0.01, subnet_login_burst: 3}"), limiterClock(&clk))
	from := func(src string) net.Conn {
		d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dialing from %s: %v", src, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		return c
	}
	login17(t, from("127.0.0.2"), "localhost", "One")
	login17(t, from("127.0.0.2"), "localhost", "Two")
	login17(t, from("127.0.0.3"), "localhost", "Three") // the subnet's third
	c := from("127.0.0.3")                              // within 127.0.0.3's own burst
	if _, err := c.Write(append(handshake(mc.Protocol1_7_10, "localhost", mc.NextStateLogin), loginStart("Four")...)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || !bytes.Contains(got, []byte("Too many logins from your network")) {
		t.Fatalf("fourth login of the subnet: %q, %v; want a disconnect saying Too many logins from your network", got, err)
	}
	waitStats(t, p, "the login_rate_subnet refusal", func(st proxymetrics.Stats) bool {
		return st.Rejected["login_rate_subnet"] == 1 && st.Rejected["login_rate"] == 0
	})
}

// TestRefusalLogsAreSampled: refusals by the per-address limits log at
// most one warning a second per reasons.Reason, saying how many were left out.
func TestRefusalLogsAreSampled(t *testing.T) {
	var buf strings.Builder
	p := &Proxy{src: ratelimit.New()}
	var clk fakeClock
	p.src.SetClock(clk.ns.Load)
	p.log = testLoggerTo(&buf)
	for range 5 {
		p.refusalEvent(reasons.ConnectionRate).Msg("refused")
		p.refusalEvent(reasons.BadFrame).Msg("bad")
	}
	clk.advance(time.Second)
	p.refusalEvent(reasons.ConnectionRate).Msg("refused")
	out := buf.String()
	if n := strings.Count(out, `"refused"`); n != 2 {
		t.Errorf("%d connection_rate warnings, want 2:\n%s", n, out)
	}
	if n := strings.Count(out, `"bad"`); n != 5 {
		t.Errorf("%d bad_frame warnings, want every one (5):\n%s", n, out)
	}
	if !strings.Contains(out, `"suppressed":4`) {
		t.Errorf("the second warning does not say 4 were suppressed:\n%s", out)
	}
}

// defaultLimits returns the limits a file that sets none gets.
func defaultLimits(t *testing.T) config.Limits {
	t.Helper()
	cfg, _, err := config.Parse("", []byte("listeners: [{listen: ':1', mode: raw, group: g}]\ngroups: {g: {backends: [{addr: '127.0.0.1:2'}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Limits
}
