package proxy

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/nodemc"
	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// nodeLoginCase is one node client of TestNodeMCLogins: the group its
// host routes to and what the client must see.
type nodeLoginCase struct {
	host string // the route's host, the client's handshake address and its name
	// forwarding is the group's with login: offline: none, bungeecord or
	// velocity; "" is a transparent group.
	forwarding string
	threshold  string // the group's compression_threshold; "" for the default
	// to is what serves the group: a node server (the client checks its
	// hello), tidegate's fake backend (raw echo), or nothing (a failure).
	to      nodeLoginTarget
	node    nodeServerKey // the node server, when backend is not given
	backend string        // the backend's address
	client  nodemc.Client
	// wantError, when set, is in the client's failure; the login must fail.
	wantError string
	// reason is the proxy's refusal reason a failure is counted as; ""
	// when the proxy relays the failure (the backend's own, untouched).
	reason string
	// uuid is the UUID (dashed) the node server must report for an
	// online-mode player; "" for the offline-mode UUID of the name.
	uuid string
}

type nodeLoginTarget int

const (
	toNode nodeLoginTarget = iota
	toFake
	toNothing
)

// nodeServerKey names a node server of the test's process.
type nodeServerKey struct {
	version   string
	threshold int
	online    bool
}

// groupYAML is the case's group, as a flow mapping.
func (c nodeLoginCase) groupYAML() string {
	g := fmt.Sprintf("{backends: [{addr: %q}]", c.backend)
	if c.forwarding != "" {
		g += ", login: offline, forwarding: " + c.forwarding
	}
	if c.forwarding == "velocity" {
		g += fmt.Sprintf(", forwarding_secret: %q", testForwardingSecret)
	}
	if c.threshold != "" {
		g += fmt.Sprintf(", compression_threshold: %q", c.threshold)
	}
	return g + "}"
}

// nodeLoginPackets is how many custom payloads every client that reaches
// play sends and wants echoed.
const nodeLoginPackets = 6

// TestNodeMCLogins: node-minecraft-protocol clients of every version from
// 1.7.10 to 1.21.11, all in one node process, log in
//
//   - through the proxy completing the login (login: offline) to
//     node-minecraft-protocol servers in offline mode, with forwarding
//     none and bungeecord (each server's hello says which name, UUID and
//     handshake address it saw), and to tidegate's fake backend checking
//     the velocity forwarding signature (it asks pre-1.13 clients too,
//     which a real server cannot), compressed and not, with
//     compression_threshold backend, off and the backend's number, and
//     (1.8.8 and 1.21.11) thresholds other than the backend's, re-framed;
//   - online, against a session server the test runs, through the
//     transparent relay to node servers in online mode asking the same
//     session server, so the relay carries the encrypted stream;
//
// and in play have every custom payload echoed, counted by the proxy both
// ways. Beside them every failure node can reach: a backend that is down
// (both login modes), a velocity secret the backend rejects, a backend not
// set up for velocity, a backend in online mode, a session server refusing
// the client's join, and an online-mode server refusing a player whose
// join named another profile (its hasJoined finds none, and its refusal
// comes through the encrypted relay). Each failing client reads why; the
// proxy counts each refusal; nothing is left running or open afterwards.
func TestNodeMCLogins(t *testing.T) {
	leaksGone := nodeMCLeakCheck(t, "the login test")
	began := time.Now()
	t.Run("logins", func(t *testing.T) {
		sessions := sessionserver.Start(t)
		cases, servers, fakes := nodeLoginCases(t, sessions)
		var routes, groups []string
		for i, c := range cases {
			name := fmt.Sprintf("g%d", i)
			routes = append(routes, fmt.Sprintf("{hosts: [%q], group: %s}", c.host, name))
			groups = append(groups, name+": "+c.groupYAML())
		}
		// A terminated login waits for the backend's Login Success within
		// the handshake timeout: one node process logging in 60 players
		// on a loaded machine takes longer than the default 5 s.
		p, addr := startProxy(t, fmt.Sprintf("listeners: [{listen: \"127.0.0.1:0\"}]\nlimits: {handshake_timeout: 60s}\nroutes: [%s]\ngroups: {%s}\n",
			strings.Join(routes, ", "), strings.Join(groups, ", ")))
		want := wantNodeLoginStats(cases)
		// Registered after startProxy, so it runs before the proxy stops.
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("node servers: %s", servers.Log())
				return
			}
			waitStats(t, p, "every node client's session to end", func(st proxymetrics.Stats) bool {
				return st.Routed == want.routed && st.Active == 0
			})
			st := p.Stats()
			if st.FramesC2S < want.frames || st.FramesS2C < want.frames {
				t.Errorf("proxy relayed %d frames to the backends and %d to the clients, want at least %d each way", st.FramesC2S, st.FramesS2C, want.frames)
			}
			if st.ConnectFailed != want.down || len(st.Rejected) != len(want.rejected) {
				t.Errorf("proxy refused %v with %d failed connects, want %v and %d", st.Rejected, st.ConnectFailed, want.rejected, want.down)
			}
			for r, n := range want.rejected {
				if st.Rejected[r] != n {
					t.Errorf("proxy refused %d sessions as %s, want %d (all: %v)", st.Rejected[r], r, n, st.Rejected)
				}
			}
			// Only the encrypted streams cannot be framed, at most both
			// directions of each.
			if st.Unframed > 2*want.encrypted {
				t.Errorf("%d streams unframed, want at most the %d encrypted ones", st.Unframed, 2*want.encrypted)
			}
			for _, f := range fakes {
				if bs := f.srv.Stats(); bs.PlayStarted != f.play || bs.Forwarded != f.play || bs.BadForwarding != f.refused {
					t.Errorf("fake backend %s: %d in play, %d forwardings verified, %d refused; want %d, %d, %d",
						f.name, bs.PlayStarted, bs.Forwarded, bs.BadForwarding, f.play, f.play, f.refused)
				}
			}
			joins, queries := sessions.Joins(), sessions.Queries()
			if int64(len(joins)) != want.joins || int64(len(queries)) != want.joins {
				t.Errorf("session server: %d joins and %d hasJoined, want %d of each", len(joins), len(queries), want.joins)
			}
		})
		runNodeLoginClients(t, len(cases), func(i int) (nodemc.Client, string, string, bool) {
			return cases[i].client, cases[i].host, addr, cases[i].to == toFake
		}, func(i int, r nodemc.Result) { checkNodeLogin(t, cases[i], r) })
	})
	t.Logf("node logins through the proxy: %v", time.Since(began).Round(time.Millisecond))
	leaksGone()
}

// nodeLoginFake is one of the fake backends and what it must have seen.
type nodeLoginFake struct {
	name          string
	srv           *mcbackend.Server
	addr          string
	play, refused int64
}

// nodeLoginCases starts the backends (one node process serving every node
// server, fake backends in this process) and returns the clients' cases.
func nodeLoginCases(t *testing.T, sessions *sessionserver.Server) ([]nodeLoginCase, *nodemc.Servers, []*nodeLoginFake) {
	t.Helper()
	var specs []nodemc.ServerSpec
	index := map[nodeServerKey]int{}
	server := func(v string, threshold int, online bool) nodeServerKey {
		k := nodeServerKey{v, threshold, online}
		if _, ok := index[k]; !ok {
			index[k] = len(specs)
			specs = append(specs, nodemc.ServerSpec{Version: v, CompressionThreshold: threshold, Online: online})
		}
		return k
	}
	newFake := func(name string, cfg mcbackend.Config) *nodeLoginFake {
		cfg.Forwarding, cfg.LoginTimeout = mcbackend.ForwardVelocity, nodeFakeLoginTimeout
		if cfg.ForwardingSecret == nil {
			cfg.ForwardingSecret = []byte(testForwardingSecret)
		}
		srv, addr := startBackendServer(t, cfg)
		return &nodeLoginFake{name: name, srv: srv, addr: addr}
	}
	fakes := map[string]*nodeLoginFake{
		"plain":      newFake("plain", mcbackend.Config{}),
		"compressed": newFake("compressed", mcbackend.Config{Compression: true, CompressionThreshold: nodeMCThreshold}),
		"wrong":      newFake("wrong secret", mcbackend.Config{ForwardingSecret: []byte("another secret")}),
	}
	var cases []nodeLoginCase
	levels := []struct {
		name      string
		threshold int
		setting   string // compression_threshold: off for a plain backend, the number for a compressed one
	}{{"plain", nodemc.NoCompression, "off"}, {"compressed", nodeMCThreshold, strconv.Itoa(nodeMCThreshold)}}
	for _, v := range nodeMCVersions {
		vh := strings.ReplaceAll(v, ".", "-")
		name := func(kind string) string { return kind + strings.ReplaceAll(v, ".", "") }
		for _, lv := range levels {
			if v == "1.7" && lv.threshold != nodemc.NoCompression {
				continue // 1.7 has no compression
			}
			// compression_threshold is the backend's by default, or set
			// to what the backend uses.
			for _, fw := range []string{"none", "bungeecord"} {
				c := nodeLoginCase{host: fmt.Sprintf("node.%s.%s.%s.login.test", lv.name, fw, vh), forwarding: fw, to: toNode,
					node: server(v, lv.threshold, false), client: nodemc.Client{Version: v, Username: name("N" + lv.name[:1] + fw[:1])}}
				if fw == "none" {
					c.threshold = lv.setting
				}
				cases = append(cases, c)
			}
			fake := fakes[lv.name]
			fake.play++
			cases = append(cases, nodeLoginCase{host: fmt.Sprintf("fake.%s.velocity.%s.login.test", lv.name, vh), forwarding: "velocity",
				threshold: lv.setting, to: toFake, backend: fake.addr, client: nodemc.Client{Version: v, Username: name("F" + lv.name[:1])}})
			// Online mode through the transparent relay.
			player := onlinePlayer(sessions, name("O"+lv.name[:1]))
			cases = append(cases, nodeLoginCase{host: fmt.Sprintf("online.%s.%s.login.test", lv.name, vh), to: toNode,
				node: server(v, lv.threshold, true), uuid: player.dashed, client: player.client(v, sessions)})
		}
		fakes["wrong"].refused++
		cases = append(cases, nodeLoginCase{host: fmt.Sprintf("wrong-secret.%s.login.test", vh), forwarding: "velocity", to: toNothing,
			backend: fakes["wrong"].addr, client: nodemc.Client{Version: v, Username: name("Wrong")},
			wantError: "Unable to verify player details", reason: "backend_login"})
	}
	// The failures node reaches, at an old and a new version each.
	down := refusedAddr(t)
	for _, v := range []string{"1.8.8", "1.21.11"} {
		vh := strings.ReplaceAll(v, ".", "-")
		name := func(kind string) string { return kind + strings.ReplaceAll(v, ".", "") }
		fail := func(kind string, c nodeLoginCase) {
			c.host, c.to = fmt.Sprintf("%s.%s.login.test", kind, vh), toNothing
			c.client.Version = v
			if c.client.Username == "" {
				short := strings.ReplaceAll(kind, "-", "")
				c.client.Username = name(short[:min(len(short), 16-len(name("")))])
			}
			cases = append(cases, c)
		}
		const offlineText = "The server is offline, try again later"
		fail("down-offline", nodeLoginCase{forwarding: "none", backend: down, wantError: offlineText, reason: "backend_unavailable"})
		fail("down-relay", nodeLoginCase{backend: down, wantError: offlineText, reason: "backend_unavailable"})
		fail("not-set-up", nodeLoginCase{forwarding: "velocity", node: server(v, nodemc.NoCompression, false),
			wantError: "not set up for the proxy's player forwarding", reason: "backend_login"})
		fail("online-backend", nodeLoginCase{forwarding: "none", node: server(v, nodemc.NoCompression, true),
			wantError: "is in online mode", reason: "backend_login"})
		// Thresholds other than the backend's: the relay re-frames.
		for _, rf := range []struct {
			setting string
			backend int
		}{{"off", nodeMCThreshold}, {"256", nodeMCThreshold}, {"16", nodeMCThreshold}, {"32", nodemc.NoCompression}} {
			cases = append(cases, nodeLoginCase{host: fmt.Sprintf("reframe-%s-%d.%s.login.test", rf.setting, rf.backend, vh), forwarding: "none",
				threshold: rf.setting, to: toNode, node: server(v, rf.backend, false), client: nodemc.Client{Version: v, Username: name("R" + rf.setting)}})
		}
		// The session server refuses the join: the client gives up, and
		// its session ends in the relay.
		c := onlinePlayer(sessions, name("BadToken")).client(v, sessions)
		c.AccessToken = "not-the-token"
		fail("refused-join", nodeLoginCase{node: server(v, nodemc.NoCompression, true), client: c, wantError: "Invalid token"})
		// The join names another player's profile: the server's hasJoined
		// finds no such join and kicks, through the encrypted relay.
		c = onlinePlayer(sessions, name("Owner")).client(v, sessions)
		c.Username = name("Impostor")
		fail("impostor", nodeLoginCase{node: server(v, nodemc.NoCompression, true), client: c, wantError: "Failed to verify username"})
	}
	servers := nodemc.StartServers(t, nodemc.ServerOptions{Servers: specs, SessionServer: sessions.URL})
	for i, c := range cases {
		if c.backend == "" {
			cases[i].backend = servers.Addr(index[c.node])
		}
	}
	list := make([]*nodeLoginFake, 0, len(fakes))
	for _, f := range fakes {
		list = append(list, f)
	}
	return cases, servers, list
}

// nodeOnlinePlayer is an account of the session server.
type nodeOnlinePlayer struct {
	sessionserver.Player
	dashed string // the UUID as a server reports it
}

// onlinePlayer adds the player name to the session server.
func onlinePlayer(s *sessionserver.Server, name string) nodeOnlinePlayer {
	id := mc.OfflineUUID([]byte(name + "-online")) // any UUID that is not the offline one
	p := sessionserver.Player{Name: name, UUID: hex.EncodeToString(id[:]), AccessToken: "token-" + name}
	s.AddPlayer(p)
	return nodeOnlinePlayer{Player: p, dashed: string(mc.AppendUUID(nil, id, true))}
}

// client is a node client of version v logging in online as p.
func (p nodeOnlinePlayer) client(v string, s *sessionserver.Server) nodemc.Client {
	return nodemc.Client{Version: v, Username: p.Name, Online: true, SessionServer: s.URL, AccessToken: p.AccessToken, ProfileID: p.UUID}
}

// nodeLoginStats is what the proxy and the session server must have
// counted once every case is done.
type nodeLoginStats struct {
	routed, frames, down, encrypted, joins int64
	rejected                               map[string]int64
}

func wantNodeLoginStats(cases []nodeLoginCase) nodeLoginStats {
	w := nodeLoginStats{rejected: map[string]int64{}}
	for _, c := range cases {
		if c.reason != "" {
			w.rejected[c.reason]++
		}
		if c.reason == "backend_unavailable" {
			w.down++
		} else {
			w.routed++
		}
		if c.wantError == "" {
			w.frames += nodeLoginPackets
		}
		if c.client.Online && c.forwarding == "" {
			w.encrypted++
			if c.client.AccessToken == "token-"+c.client.Username || strings.Contains(c.wantError, "verify username") {
				w.joins++
			}
		}
	}
	return w
}

// checkNodeLogin fails the test unless the client of case c had the
// outcome c wants: in play with every echo (and, from a node server, the
// hello naming the player as its forwarding does), or a failure saying why.
func checkNodeLogin(t *testing.T, c nodeLoginCase, r nodemc.Result) {
	t.Helper()
	if !checkNodeOutcome(t, c.host, c.wantError, r) || c.to != toNode {
		return
	}
	offline := mc.OfflineUUID([]byte(c.client.Username))
	uuid, host := c.uuid, c.host
	if uuid == "" {
		uuid = string(mc.AppendUUID(nil, offline, true))
	}
	if c.forwarding == "bungeecord" {
		host = string(mc.AppendBungeeAddress(nil, []byte(c.host), "127.0.0.1", offline, nil))
	}
	if h := r.Hello; h == nil || h.Username != c.client.Username || h.UUID != uuid || h.Protocol != r.Protocol || h.ServerHost != host {
		t.Errorf("%s: the server saw %+v, want %s %s at protocol %d, handshake address %q", c.host, r.Hello, c.client.Username, uuid, r.Protocol, host)
	}
}

// runNodeLoginClients runs n clients in one node process, client i being
// client(i) named host, connecting to addr with host in its handshake and
// sending nodeLoginPackets payloads (raw-framed for a fake backend), and
// hands each result to check.
func runNodeLoginClients(t *testing.T, n int, client func(i int) (c nodemc.Client, host, addr string, fake bool), check func(i int, r nodemc.Result)) {
	t.Helper()
	clients := make([]nodemc.Client, n)
	for i := range clients {
		c, host, addr, fake := client(i)
		c.Name, c.Addr, c.ServerAddress = host, addr, host
		c.Packets, c.PayloadBytes, c.RawEcho = nodeLoginPackets, 2000, fake
		clients[i] = c
	}
	ran := time.Now()
	results := nodemc.RunClients(t, clients...)
	t.Logf("%d node clients: %v", n, time.Since(ran).Round(time.Millisecond))
	for i, r := range results {
		check(i, r)
	}
}

// checkNodeOutcome fails the test unless the client named host failed
// saying wantError, or, when wantError is "", reached play and got every
// echo; it reports whether the client is one that reached play, to check
// further.
func checkNodeOutcome(t *testing.T, host, wantError string, r nodemc.Result) (inPlay bool) {
	t.Helper()
	if wantError != "" {
		if r.OK || !strings.Contains(r.Error, wantError) {
			t.Errorf("%s (%s): %+v, want a failure saying %q", host, r.Version, r, wantError)
		}
		return false
	}
	if err := r.Err(); err != nil {
		t.Errorf("%s: %v", host, err)
		return false
	}
	if r.Sent != nodeLoginPackets || r.Echoed != nodeLoginPackets {
		t.Errorf("%s: %d sent and %d echoed, want %d", host, r.Sent, r.Echoed, nodeLoginPackets)
	}
	return true
}
