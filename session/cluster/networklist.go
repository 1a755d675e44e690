package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrNoCluster is what NetworkSessions returns on a nil Client: the proxy
// has no cluster.redis.
var ErrNoCluster = errors.New("cluster: no network view: cluster.redis is not configured")

// ErrRedisDown is what NetworkSessions returns while the circuit breaker is
// open.
var ErrRedisDown = errors.New("cluster: Redis is not answering (the circuit breaker is open)")

// MaxNetworkScan bounds the records one NetworkSessions call reads, over
// every proxy: past it the list says Truncated and the counts are of what
// was read.
const MaxNetworkScan = 100_000

// networkScanBatch is the COUNT of each HSCAN: records per round trip.
const networkScanBatch = 1024

// Listed is one session of the network as NetworkSessions lists it.
type Listed struct {
	// Proxy is the ID of the proxy that holds the session.
	Proxy string
	Session
}

// NetworkList is what NetworkSessions found.
type NetworkList struct {
	// Proxies is the number of live proxies (whose heartbeat has not
	// expired); Scanned the records read of their sessions, Unreadable
	// those among them that did not parse (skipped), Matched those that
	// passed the filter.
	Proxies, Scanned, Unreadable, Matched int
	// Sessions are at most the limit of the matching ones, by proxy and
	// then name.
	Sessions []Listed
	// Truncated says MaxNetworkScan records were read before the end.
	Truncated bool
}

// liveProxiesScript returns the IDs of the proxies whose heartbeat has not
// expired, by Redis's clock (the one the heartbeats' scores are in).
var liveProxiesScript = newScript(luaPrelude + `
return redis.call('ZRANGEBYSCORE', P .. 'proxies', now_ms(), '+inf')
`)

// NetworkSessions reads the session records every live proxy of the
// network published (this one's included, as of its last heartbeat or
// login) and lists at most limit of those match accepts; a move shows on
// another proxy's record from its next heartbeat. It reads Redis directly,
// a batch of records per round trip, so it is for the admin API, not for
// the loops; ctx bounds it. It may be called from any goroutine, and on a
// nil Client (ErrNoCluster).
func (c *Client) NetworkSessions(ctx context.Context, match func(Listed) bool, limit int) (NetworkList, error) {
	var out NetworkList
	if c == nil {
		return out, ErrNoCluster
	}
	if c.open.Load() {
		return out, ErrRedisDown
	}
	proxies, err := c.run(ctx, liveProxiesScript).StringSlice()
	if err != nil {
		return out, fmt.Errorf("cluster: reading the live proxies from %s: %w", c.addr(), err)
	}
	slices.Sort(proxies)
	out.Proxies = len(proxies)
	for _, p := range proxies {
		if err := c.scanProxy(ctx, p, match, limit, &out); err != nil {
			return out, err
		}
		if out.Truncated {
			break
		}
	}
	slices.SortFunc(out.Sessions, func(a, b Listed) int {
		return cmp.Or(cmp.Compare(a.Proxy, b.Proxy), cmp.Compare(LowerName(a.Name), LowerName(b.Name)), a.Since.Compare(b.Since))
	})
	return out, nil
}

// scanProxy adds proxy's records to out. HSCAN may return a field twice
// (while Redis rehashes); each token is counted once.
func (c *Client) scanProxy(ctx context.Context, proxy string, match func(Listed) bool, limit int, out *NetworkList) error {
	key := c.prefix + "sessions:" + proxy
	seen := map[string]struct{}{}
	var cursor uint64
	for {
		kv, next, err := c.rdb.HScan(ctx, key, cursor, "", networkScanBatch).Result()
		if err != nil {
			return fmt.Errorf("cluster: reading %s from %s: %w", key, c.addr(), err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if _, dup := seen[kv[i]]; dup {
				continue
			}
			seen[kv[i]] = struct{}{}
			out.Scanned++
			s, err := ParseRecord(kv[i+1])
			if err != nil {
				out.Unreadable++
				continue
			}
			l := Listed{Proxy: proxy, Session: s}
			if match != nil && !match(l) {
				continue
			}
			out.Matched++
			if len(out.Sessions) < limit {
				out.Sessions = append(out.Sessions, l)
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
		if out.Scanned >= MaxNetworkScan {
			out.Truncated = true
			return nil
		}
	}
}
