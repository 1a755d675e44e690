package nodemc

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
)

func TestMain(m *testing.M) { os.Exit(leaktest.MainFDs(m)) }

// TestClientsAndServers: clients and servers of the same version talk
// directly, compressed and not, and each client's result has every echo
// and the server's hello naming the player; a client that cannot connect
// is a failed result saying so, not a test failure, beside them.
func TestClientsAndServers(t *testing.T) {
	t.Parallel()
	s := StartServers(t, ServerOptions{Servers: []ServerSpec{
		{Version: "1.20.4", CompressionThreshold: NoCompression},
		{Version: "1.20.4", CompressionThreshold: 0},
	}})
	if s.Protocols[0] != 765 || s.Protocols[1] != 765 {
		t.Fatalf("1.20.4 servers speak protocols %v, want 765", s.Protocols)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	rs := RunClients(t,
		Client{Name: "plain", Version: "1.20.4", Addr: s.Addr(0), Username: "Plain", Packets: 4},
		Client{Name: "compressed", Version: "1.20.4", Addr: s.Addr(1), Username: "Squeezed", Packets: 4, PayloadBytes: 5000},
		Client{Version: "1.20.4", Addr: closed, Username: "Nobody"},
	)
	for i, r := range rs[:2] {
		if err := r.Err(); err != nil {
			t.Fatalf("%v; server: %s", err, s.Log())
		}
		if r.Sent != 4 || r.Echoed != 4 || r.Protocol != 765 {
			t.Errorf("result %d: %+v, want 4 sent and echoed at protocol 765", i, r)
		}
		if want := []string{"Plain", "Squeezed"}[i]; r.Hello == nil || r.Hello.Username != want || r.Hello.Protocol != 765 || r.Hello.UUID == "" {
			t.Errorf("result %d: hello %+v, want %s at 765 with a UUID", i, r.Hello, want)
		}
	}
	if rs[2].OK || rs[2].Name != "client2" || !strings.Contains(rs[2].Error, "ECONNREFUSED") {
		t.Errorf("client to a closed port: %+v, want client2 failing with ECONNREFUSED", rs[2])
	}
}

// TestOnlineModeOptions: a client logging in online, with the session
// server and credentials a test gives, joins an online-mode server that
// asks the same session server (internal/testkit/sessionserver); a client
// whose join the session server refuses is turned away; a client without
// a session joins the offline server of the same version and threshold
// in the same process.
func TestOnlineModeOptions(t *testing.T) {
	t.Parallel()
	ss := sessionserver.Start(t)
	ss.AddPlayer(sessionserver.Player{Name: "Online", UUID: "0123456789abcdef0123456789abcdef", AccessToken: "good-token"})
	s := StartServers(t, ServerOptions{SessionServer: ss.URL, Servers: []ServerSpec{
		{Version: "1.16.5", CompressionThreshold: 256, Online: true},
		{Version: "1.16.5", CompressionThreshold: 256},
	}})
	rs := RunClients(t,
		Client{Name: "good", Version: "1.16.5", Addr: s.Addr(0), Username: "Online", Online: true, SessionServer: ss.URL,
			AccessToken: "good-token", ProfileID: "01234567-89ab-cdef-0123-456789abcdef", Packets: 3},
		Client{Name: "bad", Version: "1.16.5", Addr: s.Addr(0), Username: "Refused", Online: true, SessionServer: ss.URL,
			AccessToken: "bad-token", Packets: 3},
		Client{Name: "offline", Version: "1.16.5", Addr: s.Addr(1), Username: "Offline", Packets: 3},
	)
	if err := rs[0].Err(); err != nil || rs[0].Echoed != 3 {
		t.Fatalf("online client: %+v (%v); server: %s", rs[0], err, s.Log())
	}
	if h := rs[0].Hello; h == nil || h.Username != "Online" || h.UUID != "01234567-89ab-cdef-0123-456789abcdef" {
		t.Errorf("the online server saw %+v, want Online with the session server's UUID", rs[0].Hello)
	}
	if rs[1].OK || !strings.Contains(rs[1].Error, "Invalid token") {
		t.Errorf("client with a refused token: %+v, want a failure naming the session server's answer", rs[1])
	}
	if err := rs[2].Err(); err != nil || rs[2].Echoed != 3 {
		t.Errorf("offline client beside the online server: %+v (%v)", rs[2], err)
	}
	joins, queries := ss.Joins(), ss.Queries()
	if len(joins) != 1 || joins[0].SelectedProfile != "0123456789abcdef0123456789abcdef" || len(queries) != 1 ||
		queries[0].Username != "Online" || queries[0].ServerID != joins[0].ServerID {
		t.Errorf("session server saw joins %+v and hasJoined %+v, want one of each for Online with the same server ID", joins, queries)
	}
}
