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

// Client is one node-minecraft-protocol client of a RunClients process.
type Client struct {
	// Name labels the client's Result; empty means clientN.
	Name string
	// Version is a node-minecraft-protocol version name, as ServerSpec's.
	Version string
	// Addr is the host:port the client connects to.
	Addr string
	// ServerAddress replaces the address the Handshake names (by default
	// Addr's host), as a player typing another host name would: what a
	// proxy routes on.
	ServerAddress string
	// Username is the player's name.
	Username string

	// Online logs in with a session: the client asks the session server's
	// join before answering Encryption Request.
	Online bool
	// SessionServer is the session server's base URL for Online; empty
	// means Mojang's.
	SessionServer string
	// AccessToken is the token the client sends to join; empty means
	// "tidegate-test-token".
	AccessToken string
	// ProfileID is the profile UUID the client sends to join (dashes
	// allowed); empty means the offline UUID of Username.
	ProfileID string
	// PlayerKey, with Online, gives a 1.19 to 1.19.2 client a chat key:
	// its Login Start carries the key (signed with random bytes, not by
	// Mojang) and its Encryption Response signs the verify token with it
	// instead of encrypting it, as a vanilla client with a Microsoft
	// account does. Later versions send no key in the login.
	PlayerKey bool

	// Packets is how many custom payloads the client sends in play, and
	// wants echoed; zero means 10.
	Packets int
	// PayloadBytes is the size of every other payload (the rest are 12
	// bytes); zero means 300.
	PayloadBytes int
	// IntervalMS, when positive, spaces the payloads: one every IntervalMS
	// milliseconds from play on, instead of all at once.
	IntervalMS int
	// RawEcho frames the payloads as the server's custom payload, for a
	// backend that echoes frames unchanged (tidegate's fake backend); when
	// false the client talks to server.js, which echoes them and sends
	// tidegate:hello first.
	RawEcho bool
	// Moves is how many more servers the client waits for after the
	// first (a proxy moving it), echoing a batch on each; after each batch
	// it sends one more payload, "ready", for the test to move it.
	Moves int
	// Timeout bounds the client's run from start to the last echo; zero
	// means 90 s (30 clients in one node process were in play within 25 s
	// on a machine loaded 10 times over its cores).
	Timeout time.Duration
}

// Hello is what server.js saw of the player, sent on tidegate:hello.
type Hello struct {
	Username string `json:"username"`
	UUID     string `json:"uuid"`
	Protocol int    `json:"protocol"`
	// ServerHost is the Handshake's address as the server got it: with
	// BungeeCord forwarding, the host, the client's address, its UUID and
	// properties, separated by NUL bytes.
	ServerHost string `json:"serverHost"`
	// PlayerKey is whether the player's Login Start carried a chat key the
	// server accepted: never one of Client.PlayerKey, which no Mojang key
	// signed (the server refuses the login instead).
	PlayerKey bool `json:"playerKey"`
}

// Result is a client's outcome, client.js's line for it.
type Result struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
	OK       bool   `json:"ok"`
	Error    string `json:"error"`
	Sent     int    `json:"sent"`
	Echoed   int    `json:"echoed"`
	Hello    *Hello `json:"hello"`
	// Hellos counts the tidegate:hello payloads: one per server.js server
	// the client played on.
	Hellos int `json:"hellos"`
	// JoinGames and Respawns count those packets; EntityID is the last
	// Join Game's (a ServerOptions.JoinGame server's port).
	JoinGames int `json:"joinGames"`
	Respawns  int `json:"respawns"`
	// Chats counts chat packets (chat, or system_chat from 1.19).
	Chats    int `json:"chats"`
	EntityID int `json:"entityId"`
	// SignedLogin is whether the client's Login Start carried a chat key
	// (Client.PlayerKey at 1.19 to 1.19.2).
	SignedLogin bool `json:"signedLogin"`
	// JoinMS is the time from the client's start to play; DoneMS to its
	// end (the last echo, or the failure).
	JoinMS int `json:"joinMs"`
	DoneMS int `json:"doneMs"`
}

// Err says why the client failed, or is nil.
func (r Result) Err() error {
	if r.OK {
		return nil
	}
	return fmt.Errorf("node client %s (%s, protocol %d): %s", r.Name, r.Version, r.Protocol, r.Error)
}

// defaultTimeout is Client.Timeout's default.
const defaultTimeout = 90 * time.Second

// args is c as client.js's options.
func (c Client) args(i int) ([]string, error) {
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return nil, fmt.Errorf("client %d address %q: %w", i, c.Addr, err)
	}
	a := []string{"--name", c.name(i), "--version", c.Version, "--host", host, "--port", port, "--username", c.Username,
		"--timeout-ms", strconv.FormatInt(c.timeout().Milliseconds(), 10)}
	if c.ServerAddress != "" {
		a = append(a, "--server-address", c.ServerAddress)
	}
	if c.Online {
		a = append(a, "--auth", "online")
		for _, o := range [][2]string{{"--session-server", c.SessionServer}, {"--access-token", c.AccessToken}, {"--profile-id", c.ProfileID}} {
			if o[1] != "" {
				a = append(a, o[0], o[1])
			}
		}
		if c.PlayerKey {
			a = append(a, "--player-key")
		}
	}
	if c.Packets != 0 {
		a = append(a, "--packets", strconv.Itoa(c.Packets))
	}
	if c.PayloadBytes != 0 {
		a = append(a, "--payload-bytes", strconv.Itoa(c.PayloadBytes))
	}
	if c.RawEcho {
		a = append(a, "--echo", "raw")
	}
	if c.IntervalMS > 0 {
		a = append(a, "--interval-ms", strconv.Itoa(c.IntervalMS))
	}
	if c.Moves != 0 {
		a = append(a, "--moves", strconv.Itoa(c.Moves))
	}
	return a, nil
}

// name is the client's Name, or clientI when it has none.
func (c Client) name(i int) string {
	if c.Name == "" {
		return "client" + strconv.Itoa(i)
	}
	return c.Name
}

func (c Client) timeout() time.Duration {
	if c.Timeout == 0 {
		return defaultTimeout
	}
	return c.Timeout
}

// RunClients runs every client at once in one node process and returns
// their results, in the order given. A client that fails is a Result with
// OK false (see Result.Err), not a test failure; the test fails when the
// process does not run, misses a result or outlives the clients' timeouts.
func RunClients(t testing.TB, clients ...Client) []Result {
	t.Helper()
	e := lookup(t)
	if len(clients) == 0 {
		t.Fatal("nodemc.RunClients: no client given")
	}
	var args []string
	longest := time.Duration(0)
	for i, c := range clients {
		a, err := c.args(i)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			args = append(args, "--")
		}
		args = append(args, a...)
		longest = max(longest, c.timeout())
	}
	var (
		mu    sync.Mutex
		lines []string
	)
	p := start(t, e, "client.js", args, func(line string) {
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
	})
	// node's start-up and protocol loading come before the clients' own
	// timeouts begin.
	code, timedOut, err := p.wait(longest + 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if timedOut {
		t.Fatalf("node client.js did not exit within %v: output %q; stderr: %s", longest+30*time.Second, lines, p.Stderr())
	}
	results := make([]Result, len(clients))
	seen := make([]bool, len(clients))
	for _, line := range lines {
		var r Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("node client.js printed %q, not a result: %v; stderr: %s", line, err, p.Stderr())
		}
		i := index(clients, r.Name)
		if i < 0 || seen[i] {
			t.Fatalf("node client.js printed a result for %q, which is no client or a second one: %q", r.Name, line)
		}
		results[i], seen[i] = r, true
	}
	for i, ok := range seen {
		if !ok {
			t.Fatalf("node client.js (exit status %d) printed no result for client %d (%s %s); stderr: %s", code, i, clients[i].Version, clients[i].Addr, p.Stderr())
		}
	}
	failed := 0
	for _, r := range results {
		if !r.OK {
			failed++
		}
	}
	if want := map[bool]int{false: 0, true: 1}[failed > 0]; code != want {
		t.Fatalf("node client.js exited with status %d, want %d with %d of %d clients failed; stderr: %s", code, want, failed, len(results), p.Stderr())
	}
	return results
}

// index finds the client a result names.
func index(clients []Client, name string) int {
	for i, c := range clients {
		if c.name(i) == name {
			return i
		}
	}
	return -1
}

// String is the result in one line, for logs.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: ", r.Name, r.Version)
	if r.OK {
		fmt.Fprintf(&b, "ok, %d of %d echoed, in play after %d ms, done after %d ms", r.Echoed, r.Sent, r.JoinMS, r.DoneMS)
	} else {
		fmt.Fprintf(&b, "failed (%s) after %d ms", r.Error, r.DoneMS)
	}
	return b.String()
}
