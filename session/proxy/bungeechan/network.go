package bungeechan

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/cluster"
)

// NetworkReader reads the session records every live proxy of the network
// published in Redis (*cluster.Client is one).
type NetworkReader interface {
	NetworkSessions(ctx context.Context, match func(cluster.Listed) bool, limit int) (cluster.NetworkList, error)
	// ID is this proxy's: its own records are left out of the roster,
	// since the directory knows its players better than its last
	// heartbeat did.
	ID() string
}

// Bounds of the roster: how long a read of the network is reused, how
// long one may take, and how many messages may wait for one (past it they
// are answered from this proxy's players alone).
const (
	RosterTTL        = 2 * time.Second
	rosterTimeout    = 5 * time.Second
	maxRosterWaiters = 4096
)

// errRosterBusy is why a message that found too many waiting is answered
// from this proxy's players.
var errRosterBusy = errors.New("too many messages wait for the network's players")

// roster is the players of the other proxies of the network, as read off
// Redis by one goroutine at a time (never on a loop), reused for
// RosterTTL; the messages that need it wait for the read and are then
// answered on their loops.
type roster struct {
	net     NetworkReader
	ttl     time.Duration
	timeout time.Duration
	max     int // waiters
	mu      sync.Mutex
	view    *networkView
	at      time.Time
	reading bool
	waiters []func(*networkView, error)
	reads   atomic.Int64
}

// networkView is one read of the other proxies' players.
type networkView struct {
	byName   map[string]Player   // by lower-cased name
	byServer map[string][]string // names by server, sorted
	all      []string            // every name, sorted
}

func newRoster(net NetworkReader) *roster {
	return &roster{net: net, ttl: RosterTTL, timeout: rosterTimeout, max: maxRosterWaiters}
}

// get returns the network's view when a fresh one is at hand; otherwise
// it returns nil and calls f with the view once read, from the reading
// goroutine (or at once, when too many wait): with a nil view and an
// error when the read failed or was refused.
func (r *roster) get(f func(*networkView, error)) *networkView {
	r.mu.Lock()
	if r.view != nil && time.Since(r.at) < r.ttl {
		v := r.view
		r.mu.Unlock()
		return v
	}
	if len(r.waiters) >= r.max {
		r.mu.Unlock()
		f(nil, errRosterBusy)
		return nil
	}
	r.waiters = append(r.waiters, f)
	start := !r.reading
	r.reading = true
	r.mu.Unlock()
	if start {
		go r.read()
	}
	return nil
}

// read reads the network once and hands the view to every waiter.
func (r *roster) read() {
	r.reads.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	self := r.net.ID()
	list, err := r.net.NetworkSessions(ctx, func(l cluster.Listed) bool { return l.Proxy != self }, cluster.MaxNetworkScan)
	cancel()
	var v *networkView
	if err == nil {
		v = newNetworkView(list.Sessions)
	}
	r.mu.Lock()
	waiters := r.waiters
	r.waiters, r.reading = nil, false
	if v != nil {
		r.view, r.at = v, time.Now()
	}
	r.mu.Unlock()
	for _, f := range waiters {
		f(v, err)
	}
}

func newNetworkView(sessions []cluster.Listed) *networkView {
	v := &networkView{byName: make(map[string]Player, len(sessions)), byServer: map[string][]string{}}
	for _, l := range sessions {
		key := lower(l.Name)
		if _, dup := v.byName[key]; dup {
			continue
		}
		p := Player{Name: l.Name, Server: l.Backend}
		if u, ok := mc.ParseUUID([]byte(l.UUID)); ok {
			p.UUID = u
		}
		v.byName[key] = p
		v.byServer[l.Backend] = append(v.byServer[l.Backend], l.Name)
		v.all = append(v.all, l.Name)
	}
	for _, names := range v.byServer {
		slices.Sort(names)
	}
	slices.Sort(v.all)
	return v
}

// names returns the names on server (every one for all).
func (v *networkView) names(server string, all bool) []string {
	if v == nil {
		return nil
	}
	if all {
		return v.all
	}
	return v.byServer[server]
}

// find returns the player named name on another proxy.
func (v *networkView) find(name string) (Player, bool) {
	if v == nil {
		return Player{}, false
	}
	p, ok := v.byName[lower(name)]
	return p, ok
}
