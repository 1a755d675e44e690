package bungeechan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/protocol/bungeemsg"
	"github.com/tidegate/tidegate/session/cluster"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// Directory is what the channel knows of the proxy: its servers (the
// configuration's groups, by name) and its players (those whose sessions
// joined it: terminated logins in play), by name and by server. It is
// shared by the loops: its methods may be called from any goroutine.
type Directory struct {
	log     zerolog.Logger
	cfg     func() *config.Config
	network func() (online int, ok bool)
	roster  *roster // the other proxies' players; nil without a cluster
	mu      sync.RWMutex
	byName  map[string]*entry // by lower-cased name
	bySess  map[*User]*entry
}

type entry struct {
	p Player
	u *User
}

// NewDirectory returns an empty directory, which logs to log and names the
// groups of the configuration cfg returns (the one new sessions start
// under). With a cluster (net not nil) it counts PlayerCount ALL across
// the network while net's view is fresh, and answers PlayerList,
// PlayerCount of a server, GetPlayerServer and UUIDOther with the other
// proxies' players too, read off Redis (network.go); without one, or when
// that read fails, it answers with this proxy's players.
func NewDirectory(log zerolog.Logger, cfg func() *config.Config, net *cluster.Client) *Directory {
	if net == nil {
		return newDirectory(log, cfg, nil, nil)
	}
	return newDirectory(log, cfg, net, func() (int, bool) {
		n, ok := net.Network()
		return n.Online, ok
	})
}

// newDirectory is NewDirectory with the network's players read from net
// and its count from online (both nil without a cluster).
func newDirectory(log zerolog.Logger, cfg func() *config.Config, net NetworkReader, online func() (int, bool)) *Directory {
	d := &Directory{log: log, cfg: cfg, network: online, byName: map[string]*entry{}, bySess: map[*User]*entry{}}
	if net != nil {
		d.roster = newRoster(net)
	}
	return d
}

// RosterReads returns how many times the directory read the network's
// players off Redis.
func (d *Directory) RosterReads() int64 {
	if d.roster == nil {
		return 0
	}
	return d.roster.reads.Load()
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

// host is a Directory as one session's backend asks it, with the other
// proxies' players of net (nil: this proxy's alone).
type host struct {
	d    *Directory
	self *User
	net  *networkView
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
	return slices.Sorted(maps.Keys(h.d.cfg().Groups))
}

// server reports whether there is a group named name.
func (d *Directory) server(name string) (config.GroupConfig, bool) {
	g, ok := d.cfg().Groups[name]
	return g, ok
}

func (h *host) ServerAddr(name string) (string, int, bool) {
	g, ok := h.d.server(name)
	if !ok || len(g.Backends) == 0 {
		return "", 0, false
	}
	host, port := splitPort(g.Backends[0].Addr)
	return host, port, true
}

func (h *host) Count(server string) (int, bool) {
	if server == bungeemsg.All && h.d.network != nil {
		if n, ok := h.d.network(); ok {
			return n, true
		}
	}
	names, ok := h.Names(server)
	return len(names), ok
}

func (h *host) Names(server string) ([]string, bool) {
	if _, ok := h.d.server(server); !ok && server != bungeemsg.All {
		return nil, false
	}
	all := server == bungeemsg.All
	h.d.mu.RLock()
	var out []string
	for _, e := range h.d.bySess {
		if all || e.p.Server == server {
			out = append(out, e.p.Name)
		}
	}
	for _, name := range h.net.names(server, all) {
		if h.d.byName[lower(name)] == nil { // not on this proxy too, as a player moving between proxies is
			out = append(out, name)
		}
	}
	h.d.mu.RUnlock()
	slices.Sort(out)
	return out, true
}

func (h *host) Find(name string) (Player, bool) {
	if e := h.d.find(name); e != nil {
		return e.p, true
	}
	return h.net.find(name)
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
	if _, ok := h.d.server(server); !ok {
		return fmt.Errorf("no server %.64q", server)
	}
	return h.on(player, func(u *User) error { return u.Session.SendTo(server, nil) })
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
	if err := u.Loop.Execute(func() { _ = f() }); err != nil {
		return fmt.Errorf("reaching the player's loop: %w", err)
	}
	return nil
}
