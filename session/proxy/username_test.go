package proxy

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/logbuf"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// refusedLogin sends a 1.7.10 handshake and a Login Start carrying name and
// returns the text of the login Disconnect the proxy answers with, after
// checking that the proxy then closes the connection.
func refusedLogin(t *testing.T, addr, name string) string {
	t.Helper()
	c := dial(t, addr)
	if _, err := c.Write(append(handshake(mc.Protocol1_7_10, "localhost", mc.NextStateLogin), loginStart(name)...)); err != nil {
		t.Fatal(err)
	}
	id, data := readPacket(t, c)
	if id != mc.PacketLoginDisconnect {
		t.Fatalf("%q: got packet %#x %q, want a login disconnect", name, id, data)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("%q: connection not closed after the disconnect: %v", name, err)
	}
	return string(data)
}

// TestBadUsernamesNeverReachTheBackend: names the vanilla pattern refuses
// get "Invalid username", are counted as bad_username and logged quoted,
// and the backend sees no connection for them, while a good name logs in.
func TestBadUsernamesNeverReachTheBackend(t *testing.T) {
	srv, be := startBackendServer(t, mcbackend.Config{})
	var log logbuf.Buffer
	p, addr := startProxy(t, mcConfig(be, ""), func(p *Proxy) { p.log = testLoggerTo(&log) })
	bad := []string{"a\nINF x=\x1b[2J<b>", "x\x00y", "ab", "b\x01ob", "Stève"}
	for i, name := range bad {
		if got := refusedLogin(t, addr, name); !strings.Contains(got, "Invalid username") {
			t.Errorf("%q: disconnect %q, want Invalid username", name, got)
		}
		waitStats(t, p, "the bad_username refusals", func(st proxymetrics.Stats) bool { return st.Rejected["bad_username"] == int64(i+1) })
	}
	// 17 bytes do not fit the Login Start field at all: a protocol error.
	if got := refusedLogin(t, addr, "ABCDEFGHIJKLMNOPQ"); !strings.Contains(got, "Protocol error") {
		t.Errorf("17-byte name: disconnect %q, want Protocol error", got)
	}
	waitStats(t, p, "the bad_login_start refusal", func(st proxymetrics.Stats) bool { return st.Rejected["bad_login_start"] == 1 })
	if n := srv.Stats().Reactor.Accepted; n != 0 {
		t.Fatalf("the backend accepted %d connections for refused names, want 0", n)
	}

	good := dial(t, addr)
	login17(t, good, "localhost", "Steve_01")
	echo(t, good, []byte("in"))
	if st := srv.Stats(); st.Reactor.Accepted != 1 || st.LoginStarts != 1 {
		t.Fatalf("backend: %d connections, %d Login Starts; want 1 and 1 (Steve_01)", st.Reactor.Accepted, st.LoginStarts)
	}
	if n := p.Stats().Rejected["bad_username"]; n != int64(len(bad)) {
		t.Fatalf("bad_username counted %d times, want %d", n, len(bad))
	}

	// Each refusal is logged once, the name quoted in Go syntax, and no
	// line holds a raw name (the user field is left out).
	lines := log.JSONLines()
	for _, name := range bad {
		var found int
		for _, l := range lines {
			if l["reason"] == "bad_username" && strings.Contains(l["error"].(string), strconv.Quote(name)) {
				found++
				if _, ok := l["user"]; ok {
					t.Errorf("%q: the refusal carries a user field: %v", name, l)
				}
			}
		}
		if found != 1 {
			t.Errorf("%q: %d refusal lines quote it, want 1:\n%s", name, found, log.String())
		}
	}
	for _, l := range lines {
		for k, v := range l {
			if s, ok := v.(string); ok && strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Errorf("log field %s holds a control character: %q", k, s)
			}
		}
	}
}

// TestUsernamePatternAllowsOtherNames: a network's own pattern lets in a
// name the vanilla one refuses, and still refuses what it does not match.
func TestUsernamePatternAllowsOtherNames(t *testing.T) {
	srv, be := startBackendServer(t, mcbackend.Config{})
	p, addr := startProxy(t, mcConfig(be, `limits: {username_pattern: '^[a-z.]{1,16}$'}`))
	if got := refusedLogin(t, addr, "Steve_01"); !strings.Contains(got, "Invalid username") {
		t.Errorf("Steve_01: disconnect %q, want Invalid username", got)
	}
	waitStats(t, p, "the bad_username refusal", func(st proxymetrics.Stats) bool { return st.Rejected["bad_username"] == 1 })
	good := dial(t, addr)
	login17(t, good, "localhost", "a.b")
	echo(t, good, []byte("in"))
	if st := srv.Stats(); st.Reactor.Accepted != 1 || st.LoginStarts != 1 {
		t.Fatalf("backend: %d connections, %d Login Starts; want 1 and 1 (a.b)", st.Reactor.Accepted, st.LoginStarts)
	}
}
