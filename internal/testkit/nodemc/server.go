package nodemc

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// NoCompression as a ServerSpec's CompressionThreshold turns compression
// off: the server sends no Set Compression.
const NoCompression = -1

// ServerSpec is one server of a StartServers process.
type ServerSpec struct {
	// Version is a node-minecraft-protocol version name: 1.7 (1.7.10),
	// 1.8.8, ..., 1.21.11, 26.1.
	Version string
	// CompressionThreshold is the Set Compression threshold the server sends
	// (from 1.8), or NoCompression. Zero compresses every packet.
	CompressionThreshold int
	// Online makes this server authenticate players with the session
	// server's hasJoined, as ServerOptions.Online makes every server.
	Online bool
}

// ServerOptions configures StartServers.
type ServerOptions struct {
	// Servers are the servers to start, each on a free port of 127.0.0.1.
	Servers []ServerSpec
	// Online makes the servers authenticate players with the session
	// server's hasJoined (offline mode when false).
	Online bool
	// SessionServer is the session server's base URL for Online, such as
	// http://127.0.0.1:PORT; empty means Mojang's.
	SessionServer string
	// StartTimeout bounds the time until every server listens; zero means
	// 120 s: 16 servers took 56 s to start (with 2.7 s of CPU) while other
	// processes kept the disk busy.
	StartTimeout time.Duration
	// JoinGame makes every server start play with a Join Game (entity ID:
	// its port), as a vanilla server does, and report each player's
	// "ready" payload (client.js's, once a batch is echoed) as an
	// echo-ready Event.
	JoinGame bool
}

// Event is a line of server.js's output: listening, ready, join, leave,
// echo-ready (ServerOptions.JoinGame) or error, with the fields that event
// has.
type Event struct {
	Event                string `json:"event"`
	Version              string `json:"version"`
	Protocol             int    `json:"protocol"`
	CompressionThreshold int    `json:"compressionThreshold"`
	Online               bool   `json:"online"`
	Port                 int    `json:"port"`
	Username             string `json:"username"`
	UUID                 string `json:"uuid"`
	Reason               string `json:"reason"`
	Error                string `json:"error"`
}

// Servers is a node process running node-minecraft-protocol servers.
type Servers struct {
	proc  *process
	addrs []string
	// Protocols holds each server's protocol number, in the order of
	// ServerOptions.Servers.
	Protocols []int

	mu     sync.Mutex
	events []Event // after ready
}

// StartServers starts one node process running every server of opts, and
// returns once all of them listen. It is killed when the test ends.
func StartServers(t testing.TB, opts ServerOptions) *Servers {
	t.Helper()
	e := lookup(t)
	if len(opts.Servers) == 0 {
		t.Fatal("nodemc.StartServers: no server given")
	}
	args := []string{"--host", "127.0.0.1"}
	for _, s := range opts.Servers {
		serve := s.Version + "@" + strconv.Itoa(s.CompressionThreshold)
		if s.Online {
			serve += "@online"
		}
		args = append(args, "--serve", serve)
	}
	if opts.Online {
		args = append(args, "--online")
	}
	if opts.SessionServer != "" {
		args = append(args, "--session-server", opts.SessionServer)
	}
	if opts.JoinGame {
		args = append(args, "--join-game")
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 120 * time.Second
	}
	s := &Servers{addrs: make([]string, len(opts.Servers)), Protocols: make([]int, len(opts.Servers))}
	// Room for every line before ready; one more is dropped rather than
	// block the reader (and so the process's end).
	startup := make(chan Event, len(opts.Servers)+4)
	ready := false
	s.proc = start(t, e, "server.js", args, func(line string) {
		var ev Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			ev = Event{Event: "error", Error: fmt.Sprintf("not a JSON line: %q", line)}
		}
		if !ready {
			ready = ev.Event == "ready"
			select {
			case startup <- ev:
			default:
			}
			return
		}
		s.mu.Lock()
		s.events = append(s.events, ev)
		s.mu.Unlock()
	})
	deadline := time.After(timeout)
	listening := make([]bool, len(opts.Servers))
	for {
		select {
		case ev := <-startup:
			switch ev.Event {
			case "ready":
				for i, ok := range listening {
					if !ok {
						t.Fatalf("node server.js was ready without server %d (%+v) listening", i, opts.Servers[i])
					}
				}
				return s
			case "listening":
				i := s.match(opts.Servers, opts.Online, listening, ev)
				if i < 0 {
					t.Fatalf("node server.js listens for %+v, which was not asked for", ev)
				}
				listening[i] = true
				s.addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(ev.Port))
				s.Protocols[i] = ev.Protocol
			default:
				t.Fatalf("node server.js %s before it was ready: %+v; stderr: %s", ev.Event, ev, s.proc.Stderr())
			}
		case <-s.proc.exited:
			t.Fatalf("node server.js exited before it was ready: %s", s.proc.Stderr())
		case <-deadline:
			t.Fatalf("node server.js was not ready within %v: %s", timeout, s.proc.Stderr())
		}
	}
}

// match finds the server ev is for: the first of that version, threshold
// and mode not yet listening (online is every server's mode).
func (s *Servers) match(specs []ServerSpec, online bool, listening []bool, ev Event) int {
	for i, spec := range specs {
		if !listening[i] && spec.Version == ev.Version && spec.CompressionThreshold == ev.CompressionThreshold && (spec.Online || online) == ev.Online {
			return i
		}
	}
	return -1
}

// Addr is server i's address (host:port), i indexing ServerOptions.Servers.
func (s *Servers) Addr(i int) string { return s.addrs[i] }

// Events returns the join, leave and error events so far.
func (s *Servers) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// Log is the events and standard error so far, for a failure message.
func (s *Servers) Log() string {
	var b strings.Builder
	for _, ev := range s.Events() {
		fmt.Fprintf(&b, "%+v\n", ev)
	}
	b.WriteString(s.proc.Stderr())
	return b.String()
}
