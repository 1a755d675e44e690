package nodemc

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
)

func TestMain(m *testing.M) { os.Exit(leaktest.MainFDs(m)) }

// TestClientEchoesWithServer: a client and a server of the same version
// talk directly, compressed and not, and the client's result has every
// echo and the server's hello naming the player.
func TestClientEchoesWithServer(t *testing.T) {
	s := StartServers(t, ServerOptions{Servers: []ServerSpec{
		{Version: "1.20.4", CompressionThreshold: NoCompression},
		{Version: "1.20.4", CompressionThreshold: 0},
	}})
	if s.Protocols[0] != 765 || s.Protocols[1] != 765 {
		t.Fatalf("1.20.4 servers speak protocols %v, want 765", s.Protocols)
	}
	rs := RunClients(t,
		Client{Name: "plain", Version: "1.20.4", Addr: s.Addr(0), Username: "Plain", Packets: 4},
		Client{Name: "compressed", Version: "1.20.4", Addr: s.Addr(1), Username: "Squeezed", Packets: 4, PayloadBytes: 5000},
	)
	for i, r := range rs {
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
}

// TestClientFailureIsAResult: a client that cannot connect is a failed
// result saying so, not a test failure, and its neighbour still succeeds.
func TestClientFailureIsAResult(t *testing.T) {
	s := StartServers(t, ServerOptions{Servers: []ServerSpec{{Version: "1.8.8", CompressionThreshold: NoCompression}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	rs := RunClients(t,
		Client{Version: "1.8.8", Addr: closed, Username: "Nobody"},
		Client{Version: "1.8.8", Addr: s.Addr(0), Username: "Somebody", Packets: 2},
	)
	if rs[0].OK || !strings.Contains(rs[0].Error, "ECONNREFUSED") {
		t.Errorf("client to a closed port: %+v, want a failure naming ECONNREFUSED", rs[0])
	}
	if err := rs[1].Err(); err != nil || rs[1].Echoed != 2 {
		t.Errorf("client to the server: %+v (%v), want 2 echoes", rs[1], err)
	}
}
