package admin

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/tidegate/tidegate/session/cluster"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// NetworkLister is the network view on Redis (*cluster.Client; a nil one
// answers cluster.ErrNoCluster).
type NetworkLister interface {
	NetworkSessions(ctx context.Context, match func(cluster.Listed) bool, limit int) (cluster.NetworkList, error)
}

// networkTimeout bounds GET /api/v1/network/sessions's reads of Redis.
const networkTimeout = 5 * time.Second

// NetworkSessionsView is the answer of GET /api/v1/network/sessions.
type NetworkSessionsView struct {
	// Proxies is the number of live proxies; Scanned the session records
	// read of them, Unreadable those that did not parse, Matched those
	// that passed the filter.
	Proxies    int `json:"proxies"`
	Scanned    int `json:"scanned"`
	Unreadable int `json:"unreadable"`
	Matched    int `json:"matched"`
	// Sessions lists at most ?limit= of the matching ones, by proxy and
	// name; Truncated says the read stopped at cluster.MaxNetworkScan
	// records.
	Sessions  []NetworkSession `json:"sessions"`
	Truncated bool             `json:"truncated"`
}

// NetworkSession is one session of the network as its proxy published it.
type NetworkSession struct {
	Proxy string `json:"proxy"`
	User  string `json:"user"`
	UUID  string `json:"uuid,omitempty"`
	Host  string `json:"host"`
	// Group is the server the player is on: the group it logged in to or
	// the one a move took it to, as of its proxy's last heartbeat.
	Group string    `json:"group"`
	Since time.Time `json:"since"`
}

// serveNetworkSessions lists the sessions of every proxy of the network
// (cluster.redis): ?user= (any case), ?group=, ?host= (as routes match
// it), ?proxy=, ?limit=.
func (h *handler) serveNetworkSessions(w http.ResponseWriter, r *http.Request) {
	q, limit, ok := listQuery(w, r)
	if !ok {
		return
	}
	if h.opt.Network == nil {
		writeError(w, http.StatusNotFound, cluster.ErrNoCluster.Error())
		return
	}
	f := SessionFilter{Host: q.Get("host"), User: q.Get("user"), Group: q.Get("group")}.Normalized()
	proxy := q.Get("proxy")
	ctx, cancel := context.WithTimeout(r.Context(), networkTimeout)
	defer cancel()
	list, err := h.opt.Network.NetworkSessions(ctx, func(l cluster.Listed) bool {
		return (proxy == "" || l.Proxy == proxy) && f.Matches(config.NormalizeHost(l.Host), l.Name, l.Backend, "")
	}, limit)
	switch {
	case errors.Is(err, cluster.ErrNoCluster):
		writeError(w, http.StatusNotFound, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "GET /api/v1/network/sessions: "+err.Error())
		return
	}
	v := NetworkSessionsView{Proxies: list.Proxies, Scanned: list.Scanned, Unreadable: list.Unreadable, Matched: list.Matched,
		Sessions: make([]NetworkSession, 0, len(list.Sessions)), Truncated: list.Truncated}
	for _, l := range list.Sessions {
		v.Sessions = append(v.Sessions, NetworkSession{Proxy: l.Proxy, User: l.Name, UUID: l.UUID, Host: l.Host, Group: l.Backend, Since: l.Since})
	}
	writeJSON(w, http.StatusOK, v)
}

// networkPageTimeout bounds the status page's read of the network: the
// page still renders, saying why the network is missing, when Redis is
// slow.
const networkPageTimeout = 2 * time.Second

// NetworkSummary is the status page's view of the network: its players by
// proxy and by server, as each proxy last published them.
type NetworkSummary struct {
	// Proxies is the number of live proxies, Players their sessions.
	Proxies, Players int
	// Rows are the counts by proxy and server, in that order.
	Rows []NetworkRow
	// Truncated says cluster.MaxNetworkScan records were read first.
	Truncated bool
	// Err says why the network could not be read ("" when it was).
	Err string
}

// NetworkRow is the number of a proxy's players on one server.
type NetworkRow struct {
	Proxy, Server string
	Players       int
}

// networkSummary reads the network for the status page; nil without a
// cluster.
func (h *handler) networkSummary(ctx context.Context) *NetworkSummary {
	if h.opt.Network == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, networkPageTimeout)
	defer cancel()
	type key struct{ proxy, server string }
	counts := map[key]int{}
	list, err := h.opt.Network.NetworkSessions(ctx, func(l cluster.Listed) bool {
		counts[key{l.Proxy, l.Backend}]++
		return false // counted, not kept
	}, 0)
	if errors.Is(err, cluster.ErrNoCluster) {
		return nil
	}
	s := &NetworkSummary{Proxies: list.Proxies, Truncated: list.Truncated}
	if err != nil {
		s.Err = err.Error()
		return s
	}
	for k, n := range counts {
		s.Rows = append(s.Rows, NetworkRow{Proxy: k.proxy, Server: k.server, Players: n})
		s.Players += n
	}
	slices.SortFunc(s.Rows, func(a, b NetworkRow) int {
		return cmp.Or(cmp.Compare(a.Proxy, b.Proxy), cmp.Compare(a.Server, b.Server))
	})
	return s
}
