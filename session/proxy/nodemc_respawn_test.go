package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/nodemc"
	"github.com/tidegate/tidegate/session/proxy/admin"
)

// respawnVersions are the versions before 1.20.2 a move supports (the
// respawn sequence), as node-minecraft-protocol names them.
var respawnVersions = []string{"1.7", "1.8.8", "1.12.2", "1.16.5", "1.18.2", "1.19.4", "1.20.1"}

// TestNodeMCRespawnMoves: node-minecraft-protocol clients of every
// version from 1.7.10 to 1.20.1 the respawn sequence supports, logged in
// through the proxy's offline login with BungeeCord forwarding and
// compression to node-minecraft-protocol servers that start play with a
// Join Game, are moved through the admin API (POST
// /api/v1/sessions/{id}/send) from server a to b and back without a
// disconnect. Each client sees a Join Game from the new server (its entity
// ID, untouched), two Respawns per move (which it parses: their formats),
// the new server's hello, and every payload echoed in order by the server
// it is on; each old server sees its connection closed. A move to a dead
// backend first leaves each where it is, told why in a chat packet of its
// version (which it parses).
func TestNodeMCRespawnMoves(t *testing.T) {
	checkNoLeaks(t)
	const moves, packets = 2, 5
	var specs []nodemc.ServerSpec
	for _, v := range respawnVersions {
		specs = append(specs, nodemc.ServerSpec{Version: v, CompressionThreshold: 64}, nodemc.ServerSpec{Version: v, CompressionThreshold: 64})
	}
	ns := nodemc.StartServers(t, nodemc.ServerOptions{Servers: specs, JoinGame: true})
	var routes, groups []string
	var clients []nodemc.Client
	for i, v := range respawnVersions {
		host := "v" + strconv.Itoa(i) + ".respawn.test"
		routes = append(routes, fmt.Sprintf("{hosts: [%q], group: a%d}", host, i))
		for j, g := range []string{"a", "b"} {
			groups = append(groups, fmt.Sprintf("%s%d: {backends: [{addr: %q}], login: offline, forwarding: bungeecord}", g, i, ns.Addr(2*i+j)))
		}
		clients = append(clients, nodemc.Client{Name: "v" + v, Version: v, ServerAddress: host, Username: "Respawn" + strconv.Itoa(i),
			Moves: moves, Packets: packets, Timeout: 150 * time.Second})
	}
	dead := closedAddr(t)
	groups = append(groups, fmt.Sprintf("dead: {backends: [{addr: %q}], login: offline, forwarding: bungeecord}", dead))
	p, addr := startProxy(t, fmt.Sprintf("listeners: [{listen: \"127.0.0.1:0\"}]\nlimits: {handshake_timeout: 60s}\nroutes: [%s]\ngroups: {%s}\n",
		strings.Join(routes, ", "), strings.Join(groups, ", ")))
	for i := range clients {
		clients[i].Addr = addr
	}
	api := httptest.NewServer(p.AdminHandler())
	defer api.Close()

	// Each client says "ready" on the server it is on once its batch is
	// echoed; the mover then sends it to the other server, off the test's
	// goroutine (RunClients blocks it).
	moveErr := make(chan error, 1)
	go func() {
		moveErr <- func() error {
			for m := range moves {
				for i, c := range clients {
					on := ns.Addr(2*i + m%2)
					if err := pollUntil(90*time.Second, func() bool { return readies(ns, c.Username, on) > m/2 }); err != nil {
						return fmt.Errorf("move %d of %s: no ready on %s: %v\n%s", m, c.Name, on, err, ns.Log())
					}
					if m == 0 {
						if r, err := sendOverHTTP(api.URL, c.Username, admin.SendTarget{Backend: dead}); err != nil || r.Moved {
							return fmt.Errorf("%s to a dead backend: %+v %v", c.Name, r, err)
						}
					}
					to := map[bool]string{true: "b", false: "a"}[m%2 == 0] + strconv.Itoa(i)
					if r, err := sendOverHTTP(api.URL, c.Username, admin.SendTarget{Group: to}); err != nil || !r.Moved {
						return fmt.Errorf("move %d of %s to %s: %+v %v", m, c.Name, to, r, err)
					}
				}
			}
			return nil
		}()
	}()
	results := nodemc.RunClients(t, clients...)
	if err := <-moveErr; err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if err := r.Err(); err != nil {
			t.Errorf("%s: %v", r.Name, err)
			continue
		}
		final := ns.Addr(2*i + moves%2)
		if r.JoinGames != moves+1 || r.Respawns != 2*moves || r.Hellos != moves+1 || strconv.Itoa(r.EntityID) != final[strings.LastIndex(final, ":")+1:] {
			t.Errorf("%s: %d join games, %d respawns, %d hellos, entity ID %d; want %d, %d, %d and the port of %s",
				r.Name, r.JoinGames, r.Respawns, r.Hellos, r.EntityID, moves+1, 2*moves, moves+1, final)
		}
		if r.Chats < 1 {
			t.Errorf("%s: no chat about the failed move", r.Name)
		}
		if r.Echoed != packets*(moves+1) {
			t.Errorf("%s: %d echoes, want %d", r.Name, r.Echoed, packets*(moves+1))
		}
		if h := r.Hello; h == nil || !strings.Contains(h.ServerHost, "\x00127.0.0.1\x00") {
			t.Errorf("%s: the last server's hello %+v has no BungeeCord forwarding", r.Name, h)
		}
	}
	if st := p.Stats(); len(st.Ended) != 0 {
		t.Fatalf("sessions ended by the proxy: %v", st.Ended)
	}
	// The old servers' connections were closed by the move: a's first
	// (after the first move), b's (after the second).
	for i, c := range clients {
		for j := range 2 {
			on := ns.Addr(2*i + j)
			if err := pollUntil(30*time.Second, func() bool { return leaves(ns, c.Username, on) >= 1 }); err != nil {
				t.Errorf("%s: the connection to %s did not end: %v", c.Name, on, err)
			}
		}
	}
}

// readies counts user's echo-ready events on the node server at addr.
func readies(ns *nodemc.Servers, user, addr string) int {
	return countEvents(ns, "echo-ready", user, addr)
}

// leaves counts user's leave events on the node server at addr.
func leaves(ns *nodemc.Servers, user, addr string) int { return countEvents(ns, "leave", user, addr) }

func countEvents(ns *nodemc.Servers, event, user, addr string) int {
	n := 0
	for _, ev := range ns.Events() {
		if ev.Event == event && ev.Username == user && strings.HasSuffix(addr, ":"+strconv.Itoa(ev.Port)) {
			n++
		}
	}
	return n
}

// sendOverHTTP moves user to to through the admin API.
func sendOverHTTP(base, user string, to admin.SendTarget) (admin.SendResult, error) {
	body, _ := json.Marshal(to)
	resp, err := http.Post(base+"/api/v1/sessions/"+user+"/send", "application/json", bytes.NewReader(body))
	if err != nil {
		return admin.SendResult{}, err
	}
	defer resp.Body.Close()
	var r admin.SendResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return admin.SendResult{}, fmt.Errorf("status %d: %w", resp.StatusCode, err)
	}
	if len(r.Results) != 1 {
		return admin.SendResult{}, fmt.Errorf("status %d: %d results: %+v", resp.StatusCode, len(r.Results), r)
	}
	return r.Results[0], nil
}

// pollUntil polls cond every 10 ms until it holds or timeout passes: node
// servers' events have no seam to wait on, and t.Fatal is not for the
// mover's goroutine.
func pollUntil(timeout time.Duration, cond func() bool) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", timeout)
		}
		<-tick.C
	}
	return nil
}
