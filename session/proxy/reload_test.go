package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// namedBackend accepts connections, greets each with its name and a
// newline, and then echoes.
func namedBackend(t *testing.T, name string) string {
	t.Helper()
	return testserver.Conns(t, func(c net.Conn) {
		if _, err := io.WriteString(c, name+"\n"); err == nil {
			_, _ = io.Copy(c, c)
		}
	})
}

// greetedBy connects through the proxy and returns the connection, its
// reader and the name of the backend that answered.
func greetedBy(t *testing.T, addr string) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c := dial(t, addr)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	name, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the backend's greeting: %v", err)
	}
	return c, r, strings.TrimSpace(name)
}

func echoLine(t *testing.T, c net.Conn, r *bufio.Reader, line string) {
	t.Helper()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadString('\n')
	if err != nil || got != line+"\n" {
		t.Fatalf("echo: got %q, %v; want %q", got, err, line)
	}
}

// TestReloadSwapsRoutesForNewSessionsOnly: after a reload that moves the
// group to another backend, the open session goes on with the backend it
// had, new sessions go to the new one, and the hash and counters say so.
func TestReloadSwapsRoutesForNewSessionsOnly(t *testing.T) {
	a, b := namedBackend(t, "a"), namedBackend(t, "b")
	p, addr := startProxy(t, rawConfig(a))
	old, oldR, name := greetedBy(t, addr)
	if name != "a" {
		t.Fatalf("first session reached %q, want a", name)
	}
	hash := p.ConfigHash()
	cfg, err := testParseConfig(t, rawConfig(b))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Loops = 2 // as startProxy runs it
	if err := p.Reload(cfg); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if p.ConfigHash() == hash {
		t.Fatal("the config hash did not change with the backends")
	}
	c, r, name := greetedBy(t, addr)
	if name != "b" {
		t.Fatalf("a session after the reload reached %q, want b", name)
	}
	echoLine(t, c, r, "new")
	echoLine(t, old, oldR, "still on a") // the open session is untouched
	if ok, failed := p.Reloads(); ok != 1 || failed != 0 {
		t.Fatalf("reloads ok %d failed %d, want 1 and 0", ok, failed)
	}
}

// TestReloadRefusesWhatNeedsARestart: a reload that changes a listener or a
// limit the event loops enforce, or that does not validate, is refused with
// every reason, and the running configuration stays.
func TestReloadRefusesWhatNeedsARestart(t *testing.T) {
	a := namedBackend(t, "a")
	p, addr := startProxy(t, rawConfig(a))
	hash := p.ConfigHash()
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"mode and limits", fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0", mode: minecraft}]
default_group: main
groups: {main: {backends: [{addr: %q}]}}
limits: {high_watermark: 524288, low_watermark: 131072, max_sessions: 10}
`, a), []string{"listeners[0]: 127.0.0.1:0 changes mode from raw to minecraft", "limits.high_watermark changed from 262144 to 524288", "limits.max_sessions changed from 0 to 10"}},
		{"invalid", `
listeners: [{listen: "127.0.0.1:0", mode: raw, group: nowhere}]
groups: {main: {backends: [{addr: "127.0.0.1:1"}]}}
limits: {high_watermark: 262144, low_watermark: 131072}
`, []string{"nowhere"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := testParseConfig(t, tc.yaml)
			if err == nil {
				cfg.Loops = 2
				err = p.Reload(cfg)
			}
			if err == nil {
				t.Fatal("reload accepted")
			}
			p.CountFailedReload()
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tc.name == "mode and limits" {
				var re *ReloadError
				if !errors.As(err, &re) || len(re.Problems) != 3 {
					t.Errorf("want a *ReloadError with 3 problems, got %#v", err)
				}
			}
			if p.ConfigHash() != hash {
				t.Fatal("a refused reload changed the configuration")
			}
		})
	}
	if _, _, name := greetedBy(t, addr); name != "a" {
		t.Fatalf("after refused reloads a session reached %q, want a", name)
	}
	if ok, failed := p.Reloads(); ok != 0 || failed != 2 {
		t.Fatalf("reloads ok %d failed %d, want 0 and 2", ok, failed)
	}
}

// TestReloadKeepsBackendHealth: a backend in both configurations keeps its
// health state (a down backend stays down), a new one starts fresh.
func TestReloadKeepsBackendHealth(t *testing.T) {
	a, b := namedBackend(t, "a"), namedBackend(t, "b")
	p, _ := startProxy(t, rawConfig(a))
	ba := p.cur().router.groups["main"].backends[0]
	ba.Failures.Store(7)
	text := fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0", mode: raw, group: main}]
groups: {main: {backends: [{addr: %q}, {addr: %q, weight: 3}]}}
limits: {high_watermark: 262144, low_watermark: 131072}
`, a, b)
	cfg, err := testParseConfig(t, text)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Loops = 2
	if err := p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	bs := p.cur().router.groups["main"].backends
	if len(bs) != 2 || bs[0].backendHealth != ba.backendHealth || bs[0].Failures.Load() != 7 {
		t.Fatal("the backend kept across the reload lost its health state")
	}
	if bs[1].Failures.Load() != 0 || bs[1].weight != 3 {
		t.Fatalf("new backend: failures %d weight %d", bs[1].Failures.Load(), bs[1].weight)
	}
}

// TestReloadAddsAndRemovesListeners: a reload that adds a listener opens it
// at once, routed by the new configuration; one that removes a listener
// closes it (new connections are refused) while the session it accepted
// goes on.
func TestReloadAddsAndRemovesListeners(t *testing.T) {
	a, b := namedBackend(t, "a"), namedBackend(t, "b")
	first := freeAddr(t)
	text := twoGroups(a, b)
	p, _ := startProxy(t, text(fmt.Sprintf(`{listen: %q, mode: raw, group: ga}`, first)))
	old, oldR, name := greetedBy(t, first)
	if name != "a" {
		t.Fatalf("first listener reached %q, want a", name)
	}
	second := freeAddr(t)
	reload := func(yaml string) {
		t.Helper()
		cfg, err := testParseConfig(t, yaml)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Loops = 2
		if err := p.Reload(cfg); err != nil {
			t.Fatalf("Reload: %v", err)
		}
	}
	reload(text(fmt.Sprintf(`{listen: %q, mode: raw, group: ga}, {listen: %q, mode: raw, group: gb}`, first, second)))
	if _, _, name := greetedBy(t, second); name != "b" {
		t.Fatalf("added listener reached %q, want b", name)
	}
	if _, _, name := greetedBy(t, first); name != "a" {
		t.Fatalf("kept listener reached %q, want a", name)
	}
	reload(text(fmt.Sprintf(`{listen: %q, mode: raw, group: gb}`, second)))
	if c, err := net.DialTimeout("tcp", first, time.Second); err == nil {
		c.Close()
		t.Fatal("the removed listener still accepts")
	}
	echoLine(t, old, oldR, "still here") // its session goes on
	if _, _, name := greetedBy(t, second); name != "b" {
		t.Fatalf("remaining listener reached %q, want b", name)
	}
	if h := p.Reactor().Health(); len(h.Listeners) != 1 {
		t.Fatalf("health lists %d listeners, want 1", len(h.Listeners))
	}
}

// twoGroups returns the configuration text, for the listeners given, of
// groups ga and gb with backends a and b.
func twoGroups(a, b string) func(listeners string) string {
	return func(listeners string) string {
		return fmt.Sprintf(`
listeners: [%s]
groups: {ga: {backends: [{addr: %q}]}, gb: {backends: [{addr: %q}]}}
limits: {high_watermark: 262144, low_watermark: 131072}
`, listeners, a, b)
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestReloadUnchangedKeepsStatusCache: 20 reloads of the running
// configuration, each followed by a status ping, reach the backend with one
// status request, as 20 pings alone do; each counts as a reload. A reload
// that changes the configuration gives the group a new cache, so the next
// ping fetches again.
func TestReloadUnchangedKeepsStatusCache(t *testing.T) {
	be, beAddr := startBackendServer(t, mcbackend.Config{StatusProtocol: 764})
	text := mcConfig(beAddr, "status: {cache_ttl: 1m}")
	p, addr := startProxy(t, text)
	hash := p.ConfigHash()
	reload := func(text string) {
		t.Helper()
		cfg, err := testParseConfig(t, text)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Loops = 2 // as startProxy runs it
		if err := p.Reload(cfg); err != nil {
			t.Fatalf("Reload: %v", err)
		}
	}
	ping := func() {
		t.Helper()
		if _, _, err := bot.PingAndListTimeout(addr, 10*time.Second); err != nil {
			t.Fatalf("status ping: %v", err)
		}
	}
	for range 20 {
		ping()
	}
	for range 20 {
		reload(text)
		ping()
	}
	if got := be.Stats().StatusRequests; got != 1 {
		t.Fatalf("20 pings and 20 unchanged reload+ping pairs made %d backend status requests, want 1", got)
	}
	if ok, failed := p.Reloads(); ok != 20 || failed != 0 || p.ConfigHash() != hash {
		t.Fatalf("reloads ok %d failed %d, hash %s (was %s); want 20, 0 and the same hash", ok, failed, p.ConfigHash(), hash)
	}
	reload(mcConfig(beAddr, "status: {cache_ttl: 2m}"))
	ping()
	if got := be.Stats().StatusRequests; got != 2 {
		t.Fatalf("after a reload that changed the configuration: %d backend status requests, want 2", got)
	}
}
