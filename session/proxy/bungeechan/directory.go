package bungeechan

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/protocol/bungeemsg"
)

// Server is one server (group) as the channel names it.
type Server struct {
	Name string
	Addr string // its first backend's address, host:port
}

// Directory is what the channel knows of the proxy: its servers and its
// players (those whose sessions joined it: terminated logins in play), by
// name and by server. It is shared by the loops: its methods may be called
// from any goroutine.
type Directory struct {
	log     zerolog.Logger
	mu      sync.RWMutex
	servers []Server
	byName  map[string]*entry // by lower-cased name
	bySess  map[*User]*entry
	network func() (online int, ok bool)
}

type entry struct {
	p Player
	u *User
}

// NewDirectory returns an empty directory, which logs to log.
func NewDirectory(log zerolog.Logger) *Directory {
	return &Directory{log: log, byName: map[string]*entry{}, bySess: map[*User]*entry{}}
}

// SetServers sets the servers, in the configuration's order (at start and
// on each reload).
func (d *Directory) SetServers(s []Server) {
	d.mu.Lock()
	d.servers = slices.Clone(s)
	d.mu.Unlock()
}

// SetNetwork sets where PlayerCount ALL is counted across proxies: f
// returns the network's players, ok false when it cannot tell (then this
// proxy's own are counted).
func (d *Directory) SetNetwork(f func() (online int, ok bool)) {
	d.mu.Lock()
	d.network = f
	d.mu.Unlock()
}

// lower is the form names are looked up by: ASCII letters lower-cased, as
// Minecraft names compare.
func lower(name string) string { return strings.ToLower(name) }

// join adds u, of player p.
func (d *Directory) join(s *User, p Player) {
	e := &entry{p: p, u: s}
	d.mu.Lock()
	if old := d.bySess[s]; old != nil && d.byName[lower(old.p.Name)] == old {
		delete(d.byName, lower(old.p.Name))
	}
	d.bySess[s] = e
	d.byName[lower(p.Name)] = e
	d.mu.Unlock()
}

// moved records that s's player is now on server.
func (d *Directory) moved(s *User, server string) {
	d.mu.Lock()
	if e := d.bySess[s]; e != nil {
		e.p.Server = server
	}
	d.mu.Unlock()
}

// leave removes s; one that is not in is ignored.
func (d *Directory) leave(s *User) {
	d.mu.Lock()
	if e := d.bySess[s]; e != nil {
		delete(d.bySess, s)
		if d.byName[lower(e.p.Name)] == e {
			delete(d.byName, lower(e.p.Name))
		}
	}
	d.mu.Unlock()
}

// Players returns how many sessions have joined.
func (d *Directory) Players() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.bySess)
}

// host is a Directory as one session's backend asks it.
type host struct {
	d    *Directory
	self *User
}

func (h *host) Self() Player {
	h.d.mu.RLock()
	defer h.d.mu.RUnlock()
	if e := h.d.bySess[h.self]; e != nil {
		return e.p
	}
	return Player{}
}

func (h *host) Servers() []string {
	h.d.mu.RLock()
	defer h.d.mu.RUnlock()
	out := make([]string, len(h.d.servers))
	for i, s := range h.d.servers {
		out[i] = s.Name
	}
	return out
}

// server returns the server named name; d.mu is held.
func (d *Directory) server(name string) (Server, bool) {
	for _, s := range d.servers {
		if s.Name == name {
			return s, true
		}
	}
	return Server{}, false
}

func (h *host) ServerAddr(name string) (string, int, bool) {
	h.d.mu.RLock()
	s, ok := h.d.server(name)
	h.d.mu.RUnlock()
	if !ok {
		return "", 0, false
	}
	host, port := splitPort(s.Addr)
	return host, port, true
}

func (h *host) Count(server string) (int, bool) {
	h.d.mu.RLock()
	net := h.d.network
	h.d.mu.RUnlock()
	if server == bungeemsg.All && net != nil {
		if n, ok := net(); ok {
			return n, true
		}
	}
	names, ok := h.Names(server)
	return len(names), ok
}

func (h *host) Names(server string) ([]string, bool) {
	h.d.mu.RLock()
	defer h.d.mu.RUnlock()
	if _, ok := h.d.server(server); !ok && server != bungeemsg.All {
		return nil, false
	}
	var out []string
	for _, e := range h.d.bySess {
		if server == bungeemsg.All || e.p.Server == server {
			out = append(out, e.p.Name)
		}
	}
	slices.Sort(out)
	return out, true
}

func (h *host) Find(name string) (Player, bool) {
	e := h.d.find(name)
	if e == nil {
		return Player{}, false
	}
	return e.p, true
}

// find returns the entry of the player named name, nil when there is none.
func (d *Directory) find(name string) *entry {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if e := d.byName[lower(name)]; e != nil {
		cp := *e
		return &cp
	}
	return nil
}

func (h *host) Send(player, server string) error {
	h.d.mu.RLock()
	_, ok := h.d.server(server)
	h.d.mu.RUnlock()
	if !ok {
		return fmt.Errorf("no server %.64q", server)
	}
	return h.on(player, func(u *User) error { return u.Session.SendTo(server) })
}

func (h *host) Chat(player, text string) error {
	if player == bungeemsg.All {
		h.d.mu.RLock()
		all := make([]*User, 0, len(h.d.bySess))
		for u := range h.d.bySess {
			all = append(all, u)
		}
		h.d.mu.RUnlock()
		for _, u := range all {
			_ = h.run(u, func() error { u.showChat(text); return nil })
		}
		return nil
	}
	return h.on(player, func(u *User) error { u.showChat(text); return nil })
}

func (h *host) Kick(player, reason string) error {
	return h.on(player, func(u *User) error { u.kick(reason); return nil })
}

// on runs f for the session of the player named name: now for this
// session, on its loop for another (whose error is then its own to log).
func (h *host) on(name string, f func(*User) error) error {
	e := h.d.find(name)
	if e == nil {
		return fmt.Errorf("no player %.64q on this proxy", name)
	}
	return h.run(e.u, func() error { return f(e.u) })
}

// run runs f now for this session, on u's loop for another.
func (h *host) run(u *User, f func() error) error {
	if u == h.self {
		return f()
	}
	if err := u.Session.Loop().Execute(func() { _ = f() }); err != nil {
		return fmt.Errorf("reaching the player's loop: %w", err)
	}
	return nil
}
