// Package ratelimit is the proxy's limits per client address: token
// buckets of connections and logins per address, and counts of the
// sessions open per subnet.
package ratelimit

import (
	"hash/maphash"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/session/proxy/config"
)

// Limits per client address, applied to the address a connection comes
// from (a parameter, so that a PROXY-protocol listener can pass the address
// its header names):
//
//   - limits.connection_rate / connection_burst: new connections per second
//     per address, a token bucket; a connection past it is refused at
//     accept (reset), counted as connection_rate.
//   - limits.login_rate / login_burst: logins (a Login Start read) per
//     second per address; a login past it gets a disconnect message,
//     counted as login_rate.
//   - limits.max_sessions_per_subnet: sessions open at once per /24 (IPv4)
//     or /48 (IPv6) (subnet_prefix_ipv4, subnet_prefix_ipv6); past it a
//     connection is refused at accept, counted as max_sessions_per_subnet.
//
// An IPv4 address is limited on its own; an IPv6 address by its /64, as one
// host commonly holds a whole /64.
//
// The buckets are GCRA (one theoretical arrival time per bucket, the same
// decisions as a token bucket): a bucket that has refilled holds nothing a
// new one would not, so it is forgotten. They live on the proxy, across
// reloads (a reload changes rates and bursts, not the buckets), in
// limiterShards shards chosen by a seeded hash of the address, each a map
// behind its own small mutex: an accept locks one shard for a map lookup,
// on whichever loop it runs, and the loops rarely meet on one shard. Per-loop
// tables would not do: one address's connections are spread over the loops.
//
// Memory is bounded: the shards together track at most
// limits.rate_limit_addresses addresses. A shard that is full when a new
// address arrives first drops its refilled buckets, then, if it is still
// over 7/8 full (many addresses active at once, as in a flood from many
// sources), drops arbitrary ones down to 7/8, counted as evictions. An
// evicted address starts again with a full bucket, so a flood from more
// addresses than the table holds gets at most a burst per address more
// than the limits say. The subnet counts are entries only while a subnet
// has sessions open, so they are bounded by the sessions.

// limiterShards is the number of shards of the limiter tables; a power of 2.
const limiterShards = 64

// Limiter holds the per-address buckets and the per-subnet session counts.
// Its methods may be called from any goroutine.
type Limiter struct {
	seed  maphash.Seed
	start time.Time
	// now is the limiter's clock, monotonic nanoseconds (so that a step of
	// the wall clock cannot hold buckets empty); see SetClock.
	now func() int64

	shards  [limiterShards]limiterShard
	evicted atomic.Int64
}

// Key is the key of an address's buckets (RateKey) or of a subnet's
// session count (SubnetKey).
type Key = [16]byte

// limiterShard is one shard of the tables.
type limiterShard struct {
	mu      sync.Mutex
	rates   map[Key]rateEntry // by RateKey
	subnets map[Key]int32     // sessions open, by SubnetKey
	_       [40]byte
}

// rateEntry is an address's two buckets: the theoretical arrival time
// (limiter clock) of its next connection and login. A bucket whose time is
// not after now is full.
type rateEntry struct{ conn, login int64 }

// New returns an empty limiter on the monotonic clock.
func New() *Limiter {
	l := &Limiter{seed: maphash.MakeSeed(), start: time.Now()}
	l.now = func() int64 { return int64(time.Since(l.start)) + 1 }
	for i := range l.shards {
		l.shards[i].rates = map[Key]rateEntry{}
		l.shards[i].subnets = map[Key]int32{}
	}
	return l
}

// Now returns the limiter's clock, in nanoseconds.
func (l *Limiter) Now() int64 { return l.now() }

// SetClock replaces the limiter's clock; tests call it before the limiter
// is used.
func (l *Limiter) SetClock(now func() int64) { l.now = now }

func (l *Limiter) shard(key *Key) *limiterShard {
	return &l.shards[maphash.Bytes(l.seed, key[:])&(limiterShards-1)]
}

// RateKey is the bucket key of an address: itself for IPv4, its /64 for
// IPv6, in 16-byte form.
func RateKey(a netip.Addr) Key {
	k := a.As16()
	if !a.Is4() {
		clear(k[8:])
	}
	return k
}

// SubnetKey is the key of the subnet of a whose sessions are counted
// together, by lim's prefix lengths.
func SubnetKey(a netip.Addr, lim *config.Limits) Key {
	bits := lim.SubnetPrefixIPv6
	if a.Is4() {
		bits = lim.SubnetPrefixIPv4
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return a.As16() // not reached for a validated prefix length
	}
	return p.Addr().As16()
}

// SourceAddr parses a client address as the proxy admits it; ok is false
// for one that is not an IP address (nothing is limited then).
func SourceAddr(ip string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// Interval is the time one token of rate (per second) stands for, in
// nanoseconds.
func Interval(rate float64) int64 {
	return max(int64(float64(time.Second)/rate), 1)
}

// Take takes a token, at now, from the connection bucket (login false) or
// the login bucket of the address with key k, refilling at rate per second
// up to burst; it reports false when the bucket is empty. capacity bounds
// the addresses tracked.
func (l *Limiter) Take(k Key, login bool, rate float64, burst, capacity int, now int64) bool {
	iv := Interval(rate)
	tolerance := int64(burst-1) * iv
	sh := l.shard(&k)
	sh.mu.Lock()
	e, known := sh.rates[k]
	tat := &e.conn
	if login {
		tat = &e.login
	}
	t := max(*tat, now)
	if t-now > tolerance {
		sh.mu.Unlock()
		return false
	}
	*tat = t + iv
	if !known {
		if limit := max(capacity/limiterShards, 1); len(sh.rates) >= limit {
			l.evicted.Add(int64(sh.shrink(now, limit)))
		}
	}
	sh.rates[k] = e
	sh.mu.Unlock()
	return true
}

// shrink makes room in a full shard: it drops the refilled buckets, then
// arbitrary ones (map order is random) until at most 7/8 of limit remain.
// It returns how many that were not refilled it dropped.
func (sh *limiterShard) shrink(now int64, limit int) int {
	for k, e := range sh.rates {
		if e.conn <= now && e.login <= now {
			delete(sh.rates, k)
		}
	}
	keep := min(limit-1, limit-limit/8)
	evicted := 0
	for k := range sh.rates {
		if len(sh.rates) <= keep {
			break
		}
		delete(sh.rates, k)
		evicted++
	}
	return evicted
}

// Enter counts a session of the subnet with key k; it refuses (reporting
// false, counting nothing) when the subnet already has limit sessions,
// unless limit is 0.
func (l *Limiter) Enter(k Key, limit int) bool {
	sh := l.shard(&k)
	sh.mu.Lock()
	n := sh.subnets[k]
	if limit > 0 && int(n) >= limit {
		sh.mu.Unlock()
		return false
	}
	sh.subnets[k] = n + 1
	sh.mu.Unlock()
	return true
}

// Leave undoes Enter.
func (l *Limiter) Leave(k Key) {
	sh := l.shard(&k)
	sh.mu.Lock()
	if n := sh.subnets[k] - 1; n > 0 {
		sh.subnets[k] = n
	} else {
		delete(sh.subnets, k)
	}
	sh.mu.Unlock()
}

// Tracked returns how many addresses have buckets now.
func (l *Limiter) Tracked() int64 {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.rates)
		sh.mu.Unlock()
	}
	return int64(n)
}

// Evicted counts the buckets dropped before they had refilled, to keep
// the table within its capacity.
func (l *Limiter) Evicted() int64 { return l.evicted.Load() }
