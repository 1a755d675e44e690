package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/nodemc"
	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// nodeOnlineVersions are the versions of TestNodeMCOnlineLogins: issue
// #22's list, with 1.7.10 (no compression, short-prefixed encryption
// packets) and 1.19 beside 1.19.2 for both shapes of the 1.19 chat key
// (Mojang's signature v1 and v2).
var nodeOnlineVersions = []string{"1.7", "1.8.8", "1.12.2", "1.16.5", "1.19", "1.19.2", "1.20.1", "1.20.4", "1.21.11"}

// nodeOnlineCase is one node client of TestNodeMCOnlineLogins.
type nodeOnlineCase struct {
	host  string // the route's host, the client's handshake address and its name
	proxy int    // which of the test's proxies it logs in through (onlineProxies)
	// forwarding is the group's: none, bungeecord or velocity.
	forwarding string
	threshold  string // the group's compression_threshold; "" for backend
	to         nodeLoginTarget
	node       nodeServerKey // the node server (toNode)
	backend    string        // the backend's address
	player     nodeOnlinePlayer
	client     nodemc.Client
	// wantError, when set, is in the client's failure, and reason is the
	// proxy's count of it ("" when the proxy counts none).
	wantError, reason string
}

// The test's proxies, each with login: online against its own session
// server.
const (
	proxyGood    = iota // a session server that works
	proxyFailing        // hasJoined answers 500
	proxySlow           // hasJoined answers after the proxy's timeout
	proxyDown           // nothing listens at the session server's address
	onlineProxies
)

// groupYAML is the case's group, as a flow mapping.
func (c nodeOnlineCase) groupYAML() string {
	g := fmt.Sprintf("{backends: [{addr: %q}], login: online, forwarding: %s", c.backend, c.forwarding)
	if c.forwarding == "velocity" {
		g += fmt.Sprintf(", forwarding_secret: %q", testForwardingSecret)
	}
	if c.threshold != "" {
		g += fmt.Sprintf(", compression_threshold: %q", c.threshold)
	}
	return g + "}"
}

// TestNodeMCOnlineLogins: node-minecraft-protocol clients of 1.7.10 to
// 1.21.11, all in one node process, log in online through proxies that
// authenticate them (login: online) against session servers the test runs
// on loopback: each client joins with its access token and profile
// (internal/testkit/nodemc's session options), the proxy asks hasJoined,
// encrypts the client connection and logs the backend in offline:
//
//   - node-minecraft-protocol servers in offline mode (they cannot check
//     velocity forwarding) with forwarding none and bungeecord, plain and
//     compressed (the backend's threshold, or off): each server's hello
//     names the player as the session server does (the profile's name,
//     which differs in case from the one the client typed), with the
//     session server's UUID and properties in the BungeeCord handshake
//     address;
//   - tidegate's fake backend checking the velocity forwarding signature
//     (1.13 and later, as the backend asks for it in the login);
//
// 1.19 and 1.19.2 clients carry a chat key in Login Start and sign the
// verify token with it: the proxy checks the signature, and the backend's
// Login Start carries no key (node's server refuses one Mojang did not
// sign). In play every custom payload is echoed, counted both ways.
// Beside them, the failures: a player whose join named another profile
// (the session server refuses), a client whose own join was refused (it
// gives up after the Encryption Request), a session server that fails, is
// too slow or is down, a backend that is down (that refusal goes out
// encrypted); a client told another threshold than its backend's is
// re-framed, and plays like the others. Each client
// reads why, each refusal is counted, nothing is left running or open.
func TestNodeMCOnlineLogins(t *testing.T) {
	leaksGone := nodeMCLeakCheck(t, "the online login test")
	began := time.Now()
	t.Run("logins", func(t *testing.T) {
		var sessions [onlineProxies]*sessionserver.Server
		for i := range sessions {
			sessions[i] = sessionserver.Start(t)
		}
		sessions[proxyFailing].FailWith(500)
		sessions[proxySlow].Delay(time.Minute) // until the proxy gives up
		cases, servers, fakes := nodeOnlineCases(t, sessions)
		proxies, addrs := startOnlineProxies(t, cases, sessions)
		want := wantNodeOnlineStats(cases)
		// Registered after the proxies start, so it runs before they stop.
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("node servers: %s", servers.Log())
				return
			}
			for i, p := range proxies {
				w := want[i]
				waitStats(t, p, fmt.Sprintf("proxy %d: every node client's session to end", i), func(st proxymetrics.Stats) bool {
					return st.Routed == w.routed && st.Active == 0
				})
				st := p.Stats()
				if st.FramesC2S < w.frames || st.FramesS2C < w.frames || st.Unframed != 0 {
					t.Errorf("proxy %d relayed %d frames to the backends and %d to the clients (%d streams unframed), want at least %d each way, all framed",
						i, st.FramesC2S, st.FramesS2C, st.Unframed, w.frames)
				}
				if st.ConnectFailed != w.down || len(st.Rejected) != len(w.rejected) {
					t.Errorf("proxy %d refused %v with %d failed connects, want %v and %d", i, st.Rejected, st.ConnectFailed, w.rejected, w.down)
				}
				for r, n := range w.rejected {
					if st.Rejected[r] != n {
						t.Errorf("proxy %d refused %d sessions as %s, want %d (all: %v)", i, st.Rejected[r], r, n, st.Rejected)
					}
				}
				if q := int64(len(sessions[i].Queries())); q != w.queries {
					t.Errorf("proxy %d's session server was asked hasJoined %d times, want %d", i, q, w.queries)
				}
			}
			for _, f := range fakes {
				if bs := f.srv.Stats(); bs.PlayStarted != f.play || bs.Forwarded != f.play || bs.BadForwarding != 0 {
					t.Errorf("fake backend %s: %d in play, %d forwardings verified, %d refused; want %d, %d, 0",
						f.name, bs.PlayStarted, bs.Forwarded, bs.BadForwarding, f.play, f.play)
				}
			}
		})
		runNodeLoginClients(t, len(cases), func(i int) (nodemc.Client, string, string, bool) {
			return cases[i].client, cases[i].host, addrs[cases[i].proxy], cases[i].to == toFake
		}, func(i int, r nodemc.Result) { checkNodeOnline(t, cases[i], r) })
	})
	t.Logf("node online logins through the proxy: %v", time.Since(began).Round(time.Millisecond))
	leaksGone()
}

// startOnlineProxies starts one proxy per session server, each routing
// the hosts of its cases, and returns them with their addresses.
func startOnlineProxies(t *testing.T, cases []nodeOnlineCase, sessions [onlineProxies]*sessionserver.Server) ([]*Proxy, []string) {
	t.Helper()
	proxies, addrs := make([]*Proxy, onlineProxies), make([]string, onlineProxies)
	for i := range onlineProxies {
		var routes, groups []string
		for j, c := range cases {
			if c.proxy == i {
				name := fmt.Sprintf("g%d", j)
				routes = append(routes, fmt.Sprintf("{hosts: [%q], group: %s}", c.host, name))
				groups = append(groups, name+": "+c.groupYAML())
			}
		}
		url := sessions[i].URL
		if i == proxyDown {
			url = closedURL(t)
		}
		// One node process logging in some 50 players at once on a loaded
		// machine: its joins and answers take longer than the defaults.
		timeout := "30s"
		if i == proxySlow {
			timeout = "1s"
		}
		proxies[i], addrs[i] = startProxy(t, fmt.Sprintf("listeners: [{listen: \"127.0.0.1:0\"}]\n"+
			"online_mode: {session_server: %q, timeout: %s, encryption_timeout: 60s}\nlimits: {handshake_timeout: 60s}\nroutes: [%s]\ngroups: {%s}\n",
			url, timeout, strings.Join(routes, ", "), strings.Join(groups, ", ")))
	}
	return proxies, addrs
}

// nodeOnlineCases starts the backends (one node process serving every
// node server, fake backends in this process), adds the players to the
// session servers and returns the clients' cases.
func nodeOnlineCases(t *testing.T, sessions [onlineProxies]*sessionserver.Server) ([]nodeOnlineCase, *nodemc.Servers, []*nodeLoginFake) {
	t.Helper()
	var specs []nodemc.ServerSpec
	index := map[nodeServerKey]int{}
	server := func(v string, threshold int) nodeServerKey {
		k := nodeServerKey{v, threshold, false}
		if _, ok := index[k]; !ok {
			index[k] = len(specs)
			specs = append(specs, nodemc.ServerSpec{Version: v, CompressionThreshold: threshold})
		}
		return k
	}
	srv, fakeAddr := startBackendServer(t, mcbackend.Config{Compression: true, CompressionThreshold: nodeMCThreshold,
		Forwarding: mcbackend.ForwardVelocity, ForwardingSecret: []byte(testForwardingSecret), LoginTimeout: nodeFakeLoginTimeout})
	fake := &nodeLoginFake{name: "velocity", srv: srv, addr: fakeAddr}
	var cases []nodeOnlineCase
	add := func(c nodeOnlineCase, v, kind string) {
		short := strings.ReplaceAll(v, ".", "")
		c.host = fmt.Sprintf("%s.%s.online.test", kind, strings.ReplaceAll(v, ".", "-"))
		if c.player.Name == "" {
			// The profile's name differs from what the client types in
			// case only: the backend must see the profile's.
			c.player = texturedPlayer(sessions[c.proxy], kind[:min(len(kind), 15-len(short))]+short)
		}
		if c.client.Username == "" {
			key := c.client.PlayerKey
			c.client = c.player.client(v, sessions[c.proxy])
			c.client.Username, c.client.PlayerKey = strings.ToLower(c.player.Name), key
		}
		c.client.Version = v
		cases = append(cases, c)
	}
	for _, v := range nodeOnlineVersions {
		keyed := v == "1.19" || v == "1.19.2"
		// Forwarding none to a plain backend and bungeecord to a
		// compressed one (1.7 has no compression), and for the keyed
		// versions a keyless client too, whose verify token is encrypted.
		kinds := []struct {
			name, forwarding string
			threshold        int
			key              bool
		}{{"Plainn", "none", nodemc.NoCompression, keyed}, {"Compb", "bungeecord", nodeMCThreshold, keyed}}
		if v == "1.7" {
			kinds[1].name, kinds[1].threshold = "Plainb", nodemc.NoCompression
		}
		if keyed {
			kinds = append(kinds, kinds[0])
			kinds[2].name, kinds[2].forwarding, kinds[2].key = "Plainb", "bungeecord", false
		}
		for _, k := range kinds {
			c := nodeOnlineCase{forwarding: k.forwarding, to: toNode, node: server(v, k.threshold)}
			if k.threshold == nodemc.NoCompression {
				c.threshold = "off" // else the backend's, the default
			}
			c.client.PlayerKey = k.key
			add(c, v, k.name)
		}
		if v != "1.7" && v != "1.8.8" && v != "1.12.2" { // the backend asks for velocity forwarding from 1.13
			fake.play++
			c := nodeOnlineCase{forwarding: "velocity", to: toFake, backend: fake.addr}
			c.client.PlayerKey = keyed
			add(c, v, "Velo")
		}
	}
	down := refusedAddr(t)
	for i, v := range []string{"1.8.8", "1.19.2", "1.21.11"} {
		keyed := v == "1.19.2"
		fail := func(kind string, c nodeOnlineCase) {
			c.to = toNothing
			if c.node == (nodeServerKey{}) && c.backend == "" {
				c.node = server(v, nodemc.NoCompression)
			}
			if c.forwarding == "" {
				c.forwarding = "none"
			}
			c.client.PlayerKey = keyed
			add(c, v, kind)
		}
		const unavailable = "Authentication servers are down"
		// The join names another player's profile: hasJoined of the name
		// the client gave finds none.
		owner := texturedPlayer(sessions[proxyGood], "Owner"+strings.ReplaceAll(v, ".", ""))
		impostor := owner.client(v, sessions[proxyGood])
		impostor.Username = "Impostor" + strings.ReplaceAll(v, ".", "")
		fail("impostor", nodeOnlineCase{player: owner, client: impostor, wantError: "Failed to verify username", reason: "auth_refused"})
		// After the authentication: these refusals go out encrypted.
		fail("backenddown", nodeOnlineCase{backend: down, wantError: "The server is offline", reason: "backend_unavailable"})
		// A client told another threshold than its backend's: every frame
		// is re-framed (session/proxy/reframe), inside the ciphers.
		reframed := nodeOnlineCase{forwarding: "none", to: toNode, node: server(v, nodeMCThreshold), threshold: "off"}
		reframed.client.PlayerKey = keyed
		add(reframed, v, "Refr")
		// The session server's failures do not depend on the version: one
		// version each.
		switch i {
		case 0:
			// The session server refuses the client's own join: it gives
			// up and closes during the proxy's wait for its Encryption
			// Response, as a vanilla client does; the proxy counts it as
			// encryption_abandoned.
			c := nodeOnlineCase{}
			c.player = texturedPlayer(sessions[proxyGood], "BadToken"+strings.ReplaceAll(v, ".", ""))
			c.client = c.player.client(v, sessions[proxyGood])
			c.client.AccessToken = "not-the-token"
			fail("refusedjoin", nodeOnlineCase{player: c.player, client: c.client, wantError: "Invalid token", reason: "encryption_abandoned"})
			fail("down", nodeOnlineCase{proxy: proxyDown, wantError: unavailable, reason: "auth_unavailable"})
		case 1:
			fail("failing", nodeOnlineCase{proxy: proxyFailing, wantError: unavailable, reason: "auth_unavailable"})
		case 2:
			fail("slow", nodeOnlineCase{proxy: proxySlow, wantError: unavailable, reason: "auth_unavailable"})
		}
	}
	servers := nodemc.StartServers(t, nodemc.ServerOptions{Servers: specs})
	for i, c := range cases {
		if c.backend == "" {
			cases[i].backend = servers.Addr(index[c.node])
		}
	}
	return cases, servers, []*nodeLoginFake{fake}
}

// texturedPlayer adds the player name to the session server, with a
// skin: a signed textures property, which bungeecord forwarding must carry.
func texturedPlayer(s *sessionserver.Server, name string) nodeOnlinePlayer {
	p := onlinePlayer(s, name)
	p.Properties = []sessionserver.Property{{Name: "textures", Value: "c2tpbiBvZiAi" + name, Signature: "c2lnbmVkIGJ5IE1vamFuZw=="}}
	s.AddPlayer(p.Player)
	return p
}

// nodeOnlineStats is what one proxy and its session server must have
// counted once every case is done.
type nodeOnlineStats struct {
	routed, frames, down, queries int64
	rejected                      map[string]int64
}

func wantNodeOnlineStats(cases []nodeOnlineCase) [onlineProxies]nodeOnlineStats {
	var w [onlineProxies]nodeOnlineStats
	for i := range w {
		w[i].rejected = map[string]int64{}
	}
	for _, c := range cases {
		s := &w[c.proxy]
		if c.reason != "" {
			s.rejected[c.reason]++
		}
		gaveUp := c.client.AccessToken == "not-the-token" // never answered the Encryption Request
		switch {
		case c.reason == "" && !gaveUp, c.reason == "backend_login":
			s.routed++
		case c.reason == "backend_unavailable":
			s.down++
		}
		if c.wantError == "" {
			s.frames += nodeLoginPackets
		}
		// Every client that sent its Encryption Response was asked about.
		if !gaveUp {
			s.queries++
		}
	}
	w[proxyDown].queries = 0 // nothing listens there
	return w
}

// checkNodeOnline fails the test unless the client of case c had the
// outcome c wants: in play with every echo, its Login Start signed when
// its version carries keys, and, from a node server, the hello naming the
// profile the session server gave (with its UUID and properties in the
// handshake address under bungeecord); or a failure saying why.
func checkNodeOnline(t *testing.T, c nodeOnlineCase, r nodemc.Result) {
	t.Helper()
	if r.SignedLogin != c.client.PlayerKey {
		t.Errorf("%s: the client's Login Start signed: %t, want %t", c.host, r.SignedLogin, c.client.PlayerKey)
	}
	if !checkNodeOutcome(t, c.host, c.wantError, r) || c.to != toNode {
		return
	}
	// A backend in offline mode names the player by the offline-mode UUID
	// of the name it got; bungeecord forwarding carries the profile's.
	name := c.player.Name
	uuid, host := string(mc.AppendUUID(nil, mc.OfflineUUID([]byte(name)), true)), c.host
	if c.forwarding == "bungeecord" {
		id, ok := mc.ParseUUID([]byte(c.player.UUID))
		if !ok {
			t.Fatalf("player %s's UUID %q is not one", name, c.player.UUID)
		}
		props, _ := json.Marshal(c.player.Properties)
		host = string(mc.AppendBungeeAddress(nil, []byte(c.host), "127.0.0.1", id, props))
	}
	if h := r.Hello; h == nil || h.Username != name || h.UUID != uuid || h.Protocol != r.Protocol || h.ServerHost != host || h.PlayerKey {
		t.Errorf("%s: the server saw %+v, want %s %s at protocol %d, handshake address %q, no player key", c.host, r.Hello, name, uuid, r.Protocol, host)
	}
}
