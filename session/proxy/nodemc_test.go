package proxy

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
	"github.com/tidegate/tidegate/internal/testkit/nodemc"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// nodeMCVersions are the node-minecraft-protocol versions the relay is
// tested with: 1.7 is 1.7.10 (protocol 5, which has no compression), and
// 1.21.11 the newest 1.21 that minecraft-protocol 1.68.0 speaks.
var nodeMCVersions = []string{"1.7", "1.8.8", "1.12.2", "1.16.5", "1.19.2", "1.20.1", "1.20.4", "1.21.11"}

// nodeMCThreshold is the compression threshold of the compressed
// backends: the clients' 12-byte payloads go below it, the others above.
const nodeMCThreshold = 64

// nodeFakeLoginTimeout is the fake backends' login timeout in the node
// tests: the default 10 s from accept to play was passed by 1.21.11
// clients (the last of some 60 in one node process, with a configuration
// phase) on a machine loaded 15 times over its two cores.
const nodeFakeLoginTimeout = time.Minute

// nodeMCTarget is one backend the clients of a version reach through the
// proxy, by the host name they put in their handshake.
type nodeMCTarget struct {
	host string
	fake bool   // tidegate's fake backend (raw echo), else a node server
	addr string // the backend's address
}

// TestNodeMCClientsThroughRelay: node-minecraft-protocol clients of every
// version from 1.7.10 to 1.21.11 log in offline through the transparent
// relay, to node-minecraft-protocol servers and to tidegate's fake
// backend, with compression off and on, and in play get every custom
// payload they send echoed (the node servers also send a hello naming the
// player first). One node process serves every node backend, another runs
// every client. Nothing is left running afterwards.
func TestNodeMCClientsThroughRelay(t *testing.T) {
	leaksGone := nodeMCLeakCheck(t, "the relay test")
	began := time.Now()
	t.Run("versions", func(t *testing.T) {
		targets := startNodeMCTargets(t)
		var routes, groups []string
		for _, ts := range targets {
			for _, tg := range ts {
				name := strings.ReplaceAll(strings.TrimSuffix(tg.host, ".nodemc.test"), ".", "_")
				routes = append(routes, fmt.Sprintf("{hosts: [%q], group: %s}", tg.host, name))
				groups = append(groups, fmt.Sprintf("%s: {backends: [{addr: %q}]}", name, tg.addr))
			}
		}
		// The handshake timeout covers a client's way to its backend's
		// answer: one node process logging in 30 players on a loaded
		// machine takes longer than the default 5 s.
		p, addr := startProxy(t, fmt.Sprintf("listeners: [{listen: \"127.0.0.1:0\"}]\nlimits: {handshake_timeout: 60s}\nroutes: [%s]\ngroups: {%s}\n",
			strings.Join(routes, ", "), strings.Join(groups, ", ")))
		const packets = 10
		sessions := len(routes)
		// Registered after startProxy, so it runs before the proxy stops,
		// once every version's clients are done.
		t.Cleanup(func() {
			if t.Failed() {
				return
			}
			waitStats(t, p, "every node client's session relayed and ended", func(st proxymetrics.Stats) bool {
				return st.Routed == int64(sessions) && st.Active == 0 &&
					st.FramesC2S >= int64(sessions*packets) && st.FramesS2C >= int64(sessions*packets)
			})
			if st := p.Stats(); st.Unframed != 0 || len(st.Rejected) != 0 || st.ConnectFailed != 0 {
				t.Errorf("proxy stats %+v: want no unframed, rejected or failed sessions", st)
			}
		})
		// All clients run in one node process: loading minecraft-protocol
		// costs each process 0.4 s of CPU, and all 30 clients' logins and
		// echoes 2.4 s in one, so a process per version (parallel
		// subtests) would more than double the CPU on two cores.
		var clients []nodemc.Client
		var of []nodeMCTarget
		for _, v := range nodeMCVersions {
			for i, tg := range targets[v] {
				clients = append(clients, nodemc.Client{
					Name: tg.host, Version: v, Addr: addr, ServerAddress: tg.host,
					Username: fmt.Sprintf("Relay%s_%d", strings.ReplaceAll(v, ".", ""), i),
					Packets:  packets, PayloadBytes: 2000, RawEcho: tg.fake,
				})
				of = append(of, tg)
			}
		}
		results := nodemc.RunClients(t, clients...)
		for _, v := range nodeMCVersions {
			t.Run(v, func(t *testing.T) {
				for i, r := range results {
					if clients[i].Version == v {
						checkNodeMCResult(t, clients[i], of[i], r, packets)
					}
				}
			})
		}
	})
	t.Logf("node clients and servers of %d versions: %v", len(nodeMCVersions), time.Since(began).Round(time.Millisecond))
	leaksGone()
}

// nodeMCLeakCheck counts the goroutines and descriptors before a node test
// and returns the check that they are back to that count, for the test to
// call once the subtest that ran its proxy, backends and node processes
// has ended (their cleanups have run).
func nodeMCLeakCheck(t *testing.T, what string) (check func()) {
	t.Helper()
	// The runtime's poller descriptors are opened by the first pollable
	// file and kept for good: open them before counting.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	runtime.GC()
	goroutines, fds := leaktest.Goroutines(), leaktest.OpenFDs()
	return func() {
		t.Helper()
		waitfor.Check(t, "the goroutines and descriptors of "+what+" to end", func() error {
			if g, n := leaktest.Goroutines(), leaktest.OpenFDs(); g > goroutines || n > fds {
				return fmt.Errorf("%d goroutines and %d descriptors, %d and %d before", g, n, goroutines, fds)
			}
			return nil
		})
	}
}

// startNodeMCTargets starts one node process with a plain and a
// compressed server of each version (1.7 has no compression) and the fake
// backends, plain and compressed, and returns each version's targets.
func startNodeMCTargets(t *testing.T) map[string][]nodeMCTarget {
	t.Helper()
	var specs []nodemc.ServerSpec
	for _, v := range nodeMCVersions {
		specs = append(specs, nodemc.ServerSpec{Version: v, CompressionThreshold: nodemc.NoCompression})
		if v != "1.7" {
			specs = append(specs, nodemc.ServerSpec{Version: v, CompressionThreshold: nodeMCThreshold})
		}
	}
	servers := nodemc.StartServers(t, nodemc.ServerOptions{Servers: specs})
	fake := map[bool]string{
		false: startBackend(t, mcbackend.Config{LoginTimeout: nodeFakeLoginTimeout}),
		true:  startBackend(t, mcbackend.Config{Compression: true, CompressionThreshold: nodeMCThreshold, LoginTimeout: nodeFakeLoginTimeout}),
	}
	targets := map[string][]nodeMCTarget{}
	for i, s := range specs {
		compress := s.CompressionThreshold != nodemc.NoCompression
		for _, isFake := range []bool{false, true} {
			kind := map[bool]string{false: "node", true: "fake"}[isFake]
			level := map[bool]string{false: "plain", true: "compressed"}[compress]
			tg := nodeMCTarget{host: fmt.Sprintf("%s.%s.%s.nodemc.test", kind, level, strings.ReplaceAll(s.Version, ".", "-")),
				fake: isFake, addr: servers.Addr(i)}
			if isFake {
				tg.addr = fake[compress]
			}
			targets[s.Version] = append(targets[s.Version], tg)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node servers: %s", servers.Log())
		}
	})
	return targets
}

// checkNodeMCResult fails the test unless client c reached play and got
// every echo, and a node server's hello named the player with its offline
// UUID and the handshake address the client sent.
func checkNodeMCResult(t *testing.T, c nodemc.Client, tg nodeMCTarget, r nodemc.Result, packets int) {
	t.Helper()
	t.Log(r)
	if err := r.Err(); err != nil {
		t.Errorf("through the proxy to %s: %v", tg.host, err)
		return
	}
	if r.Sent != packets || r.Echoed != packets {
		t.Errorf("%s: %d sent and %d echoed, want %d", tg.host, r.Sent, r.Echoed, packets)
	}
	if tg.fake {
		return
	}
	uuid := string(mc.AppendUUID(nil, mc.OfflineUUID([]byte(c.Username)), true))
	if h := r.Hello; h == nil || h.Username != c.Username || h.UUID != uuid || h.Protocol != r.Protocol || h.ServerHost != tg.host {
		t.Errorf("%s: the server saw %+v, want %s %s at protocol %d, handshake address unchanged", tg.host, r.Hello, c.Username, uuid, r.Protocol)
	}
}
