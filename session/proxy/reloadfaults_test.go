package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/seam"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// A reload's faults, step by step: a client that resets while a reload
// adds or removes its listener, or while it relays; a reload that comes
// during a live upgrade's hand-over, in the old process or the new one.
// For each: no panic, Reload returns what it should, the sessions that
// could be kept relay, and nothing stays counted (sessions, MaxConns
// slots, descriptors). docs/live-upgrade.md lists these.

// resetConn resets c.
func resetConn(c net.Conn) {
	_ = c.(*net.TCPConn).SetLinger(0)
	_ = c.Close()
}

func TestReloadFaults(t *testing.T) {
	for _, tc := range []struct {
		step, fault string
		run         func(t *testing.T, r *reloadRig)
	}{
		{"listener added, before it accepts", "client resets", func(t *testing.T, r *reloadRig) {
			seam.Set(t, &testHookListenersOpened, func() { resetConn(dial(t, r.second)) })
			r.reload(t, r.first, r.second)
			r.greeted(t, r.second, "b")
		}},
		{"listener removed, its backlog taken", "client resets", func(t *testing.T, r *reloadRig) {
			r.reload(t, r.first, r.second)
			seam.Set(t, &testHookListenersOpened, func() { resetConn(dial(t, r.second)) })
			r.reload(t, r.first)
		}},
		{"during the reload", "a relaying client resets", func(t *testing.T, r *reloadRig) {
			c, _, _ := greetedBy(t, r.first)
			seam.Set(t, &testHookListenersOpened, func() { resetConn(c) })
			r.reload(t, r.first, r.second)
			r.greeted(t, r.second, "b")
		}},
		{"hand-over, old process", "a reload adds a listener", func(t *testing.T, r *reloadRig) {
			cfg := r.config(t, r.first, r.second)
			var once sync.Once
			refused := make(chan error, 1)
			seam.Set(t, &testHookHandOverSend, func(*os.File) { once.Do(func() { refused <- r.p.Reload(cfg) }) })
			newP, _ := startProxy(t, r.text(r.first))
			if n := handOver(t, r.p, newP); n != len(r.kept) {
				t.Fatalf("handed over %d sessions, want %d", n, len(r.kept))
			}
			var re *ReloadError
			if err := <-refused; !errors.As(err, &re) || !strings.Contains(err.Error(), errReloadDuringUpgrade) {
				t.Fatalf("a reload during the hand-over: %v, want it refused", err)
			}
			if l := len(r.p.ListenAddrs()); l != 1 {
				t.Fatalf("the old proxy listens on %d addresses after the refused reload, want 1", l)
			}
			if err := r.p.Reload(cfg); err != nil {
				t.Fatalf("a reload once the hand-over is over: %v", err)
			}
			r.other = newP
		}},
		{"hand-over, new process", "a reload adds a listener", func(t *testing.T, r *reloadRig) {
			newP, _ := startProxy(t, r.text(r.first))
			cfg := r.config(t, r.first, r.second)
			var once sync.Once
			reloaded := make(chan error, 1)
			seam.Set(t, &testHookTakeOverAdopt, func(int64, []*os.File) { once.Do(func() { reloaded <- newP.Reload(cfg) }) })
			if n := handOver(t, r.p, newP); n != len(r.kept) {
				t.Fatalf("handed over %d sessions, want %d", n, len(r.kept))
			}
			if err := <-reloaded; err != nil {
				t.Fatalf("a reload of the new process while it takes over: %v", err)
			}
			r.other = newP
			r.greeted(t, r.second, "b")
		}},
	} {
		t.Run(tc.step+"/"+tc.fault, func(t *testing.T) {
			r := newReloadRig(t)
			tc.run(t, r)
			r.check(t)
		})
	}
}

// reloadRig is a proxy with two backends (a, b) and two listener addresses
// (first to a, second to b), starting with first only, and one session on
// first that must outlive every fault.
type reloadRig struct {
	p             *Proxy
	other         *Proxy // the new proxy of a hand-over, if any
	a, b          string
	first, second string
	held          int64
	kept          []net.Conn
	readers       []*bufio.Reader
}

func newReloadRig(t *testing.T) *reloadRig {
	r := &reloadRig{a: namedBackend(t, "a"), b: namedBackend(t, "b"), first: freeAddr(t), second: freeAddr(t)}
	r.p, _ = startProxy(t, r.text(r.first))
	r.held = reactor.HeldFDs()
	c, br, name := greetedBy(t, r.first)
	if name != "a" {
		t.Fatalf("a session on the first listener reached %s, want a", name)
	}
	r.kept, r.readers = []net.Conn{c}, []*bufio.Reader{br}
	return r
}

// text is the configuration with listeners at addrs (first to a, second to
// b); reuse_port, so that a hand-over's two proxies can share them.
func (r *reloadRig) text(addrs ...string) string {
	var ls []string
	for _, addr := range addrs {
		g := "ga"
		if addr == r.second {
			g = "gb"
		}
		ls = append(ls, fmt.Sprintf(`{listen: %q, mode: raw, group: %s}`, addr, g))
	}
	return twoGroups(r.a, r.b)(strings.Join(ls, ", ")) + "reuse_port: true\n"
}

func (r *reloadRig) config(t *testing.T, addrs ...string) *config.Config {
	cfg, err := testParseConfig(t, r.text(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Loops = 2
	return cfg
}

// reload reloads the serving proxy to listeners at addrs.
func (r *reloadRig) reload(t *testing.T, addrs ...string) {
	t.Helper()
	p := r.p
	if r.other != nil {
		p = r.other
	}
	if err := p.Reload(r.config(t, addrs...)); err != nil {
		t.Fatalf("Reload: %v", err)
	}
}

// greeted checks that a session on addr reaches backend name, and keeps it.
func (r *reloadRig) greeted(t *testing.T, addr, name string) {
	t.Helper()
	c, br, got := greetedBy(t, addr)
	if got != name {
		t.Fatalf("a session on %s reached %s, want %s", addr, got, name)
	}
	r.kept, r.readers = append(r.kept, c), append(r.readers, br)
}

// check: every kept session relays, and the proxies count exactly those.
func (r *reloadRig) check(t *testing.T) {
	t.Helper()
	for i, c := range r.kept {
		echoLine(t, c, r.readers[i], fmt.Sprintf("still relaying %d", i))
	}
	n := int64(len(r.kept))
	count := func(f func(*Proxy) int64) int64 {
		v := f(r.p)
		if r.other != nil {
			v += f(r.other)
		}
		return v
	}
	waitfor.Within(t, 10*time.Second, "only the kept sessions counted", func() error {
		active := count(func(p *Proxy) int64 { return p.Stats().Active })
		slots := count(func(p *Proxy) int64 { return p.Reactor().AcceptedOpen() })
		if active != n || slots != n {
			return fmt.Errorf("%d sessions and %d MaxConns slots counted, want %d", active, slots, n)
		}
		return nil
	})
	waitfor.Value(t, "the descriptors held to be the sessions' own", reactor.HeldFDs,
		func(h int64) bool { return h == r.held+n*fdsPerHandedSession })
}
