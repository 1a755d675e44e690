// Package sessionserver is a fake Mojang session server on loopback for
// online-mode tests: an httptest server on an ephemeral port implementing
// the two endpoints of an online-mode login.
//
//   - POST /session/minecraft/join is what a client calls after the
//     Encryption Request: {accessToken, selectedProfile, serverId}. The
//     server records the join when the token belongs to the player added
//     with that profile (204), and answers 403 otherwise, as Mojang does.
//     selectedProfile is taken as the vanilla client sends it (the
//     undashed UUID string) and as go-mc's bot does (an {id, name} object).
//   - GET /session/minecraft/hasJoined?username=&serverId=[&ip=] is what the
//     server (the proxy) calls: 200 with the profile {id, name, properties}
//     when a join of that player with that server ID was recorded (and,
//     when ip is given, from that address), 204 otherwise. The name is
//     matched regardless of case (Minecraft names are unique regardless of
//     case), and the profile's own spelling is what comes back, so a test
//     can tell the name a client typed from the profile's.
//
// Knobs make hasJoined refuse (204), fail (a status), or answer late.
//
// Pointing clients at it: node-minecraft-protocol's client takes the
// sessionServer option (set it to URL); its server calls
// require('yggdrasil').server({agent}) with no host, so a test wraps that
// function to add host: URL before createServer. go-mc's bot (v1.20.2, bot/login.go)
// posts to the fixed URL https://sessionserver.mojang.com/session/minecraft/join
// with http.DefaultClient and has no option for another server: a test
// points it here with RedirectDefaultClient, which swaps
// http.DefaultClient's Transport for one that sends requests for
// sessionserver.mojang.com to this server (over plain HTTP), and restores
// it when the test ends. That is process-wide: such a test must not run in
// parallel with others that use http.DefaultClient.
package sessionserver

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// MojangHost is the session server's host name in go-mc's bot.
const MojangHost = "sessionserver.mojang.com"

// Property is one profile property as hasJoined returns it (textures, for
// example); Signature is "" for an unsigned one.
type Property struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Signature string `json:"signature,omitempty"`
}

// Player is an account the server knows.
type Player struct {
	Name        string
	UUID        string // 32 hex digits, undashed, as Mojang writes it
	AccessToken string
	Properties  []Property
}

// Join is one recorded call of the join endpoint.
type Join struct {
	AccessToken     string
	SelectedProfile string // undashed UUID
	ServerID        string
	RemoteIP        string
}

// Query is one recorded call of hasJoined.
type Query struct {
	Username, ServerID, IP string
	HasIP                  bool
}

// Server is a running fake session server.
type Server struct {
	// URL is the base URL to configure as the session server, such as
	// http://127.0.0.1:41234 (no trailing slash).
	URL string

	srv *httptest.Server

	mu      sync.Mutex
	players map[string]Player // by UUID
	joins   []Join
	queries []Query
	answers int // hasJoined calls answered (or given up by their caller)
	refuse  bool
	status  int
	delay   time.Duration
}

// Start starts a server on loopback, closed when t ends.
func Start(t testing.TB) *Server {
	s := &Server{players: make(map[string]Player)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /session/minecraft/join", s.join)
	mux.HandleFunc("GET /session/minecraft/hasJoined", s.hasJoined)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// AddPlayer makes p known: its token may join as it.
func (s *Server) AddPlayer(p Player) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.players[strings.ToLower(p.UUID)] = p
}

// Refuse makes hasJoined answer 204 (not joined) whatever was recorded.
func (s *Server) Refuse(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = on
}

// FailWith makes hasJoined answer status with an error body; 0 goes back
// to answering normally.
func (s *Server) FailWith(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

// Delay makes hasJoined wait d before answering (or until the caller gives
// up).
func (s *Server) Delay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Joins returns the joins recorded so far.
func (s *Server) Joins() []Join {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Join(nil), s.joins...)
}

// Queries returns the hasJoined calls received so far.
func (s *Server) Queries() []Query {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Query(nil), s.queries...)
}

// Answers returns how many hasJoined calls have been answered, or ended
// by their caller while delayed.
func (s *Server) Answers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answers
}

// joinRequest is the join body; selectedProfile is a string (vanilla) or
// an object (go-mc).
type joinRequest struct {
	AccessToken     string          `json:"accessToken"`
	SelectedProfile json.RawMessage `json:"selectedProfile"`
	ServerID        string          `json:"serverId"`
}

func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	var req joinRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		forbidden(w, "bad join body: "+err.Error())
		return
	}
	var profile string
	if err := json.Unmarshal(req.SelectedProfile, &profile); err != nil {
		var obj struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(req.SelectedProfile, &obj); err != nil {
			forbidden(w, "bad selectedProfile: "+string(req.SelectedProfile))
			return
		}
		profile = obj.ID
	}
	profile = strings.ToLower(strings.ReplaceAll(profile, "-", ""))
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.players[profile]
	if !ok || p.AccessToken != req.AccessToken {
		forbidden(w, "Invalid token.")
		return
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	s.joins = append(s.joins, Join{AccessToken: req.AccessToken, SelectedProfile: profile, ServerID: req.ServerID, RemoteIP: ip})
	w.WriteHeader(http.StatusNoContent)
}

func forbidden(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": "ForbiddenOperationException", "errorMessage": msg})
}

// profileJSON is hasJoined's answer.
type profileJSON struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Properties []Property `json:"properties"`
}

func (s *Server) hasJoined(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	query := Query{Username: q.Get("username"), ServerID: q.Get("serverId"), IP: q.Get("ip"), HasIP: q.Has("ip")}
	s.mu.Lock()
	s.queries = append(s.queries, query)
	delay, status, refuse := s.delay, s.status, s.refuse
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.answers++
		s.mu.Unlock()
	}()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if status != 0 {
		http.Error(w, `{"error":"InternalServerError"}`, status)
		return
	}
	s.mu.Lock()
	var found *Player
	for _, j := range s.joins {
		p := s.players[j.SelectedProfile]
		if !refuse && j.ServerID == query.ServerID && strings.EqualFold(p.Name, query.Username) && (!query.HasIP || j.RemoteIP == query.IP) {
			found = &p
			break
		}
	}
	s.mu.Unlock()
	if found == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	props := found.Properties
	if props == nil {
		props = []Property{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(profileJSON{ID: found.UUID, Name: found.Name, Properties: props})
}

// RedirectDefaultClient sends http.DefaultClient's requests for
// sessionserver.mojang.com (go-mc's bot calls nothing else) to s, over
// plain HTTP, until t ends. See the package doc.
func (s *Server) RedirectDefaultClient(t testing.TB) {
	base, err := url.Parse(s.URL)
	if err != nil {
		t.Fatalf("session server URL %q: %v", s.URL, err)
	}
	old := http.DefaultClient.Transport
	next := old
	if next == nil {
		next = http.DefaultTransport
	}
	http.DefaultClient.Transport = redirect{to: base, next: next}
	t.Cleanup(func() { http.DefaultClient.Transport = old })
}

// redirect is a RoundTripper that rewrites the Mojang host to another.
type redirect struct {
	to   *url.URL
	next http.RoundTripper
}

func (rd redirect) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Hostname() != MojangHost {
		return rd.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = rd.to.Scheme, rd.to.Host, rd.to.Host
	return rd.next.RoundTrip(r)
}
