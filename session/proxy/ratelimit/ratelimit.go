// Package ratelimit is the proxy's limits per client address: token
// buckets of connections and logins per address and per subnet, and counts
// of the sessions open per subnet.
package ratelimit

import (
	"hash/maphash"
	"net/netip"
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
//   - limits.subnet_connection_rate / subnet_connection_burst: the same per
//     subnet, so that a client rotating through the addresses of its
//     subnet gets no more than the subnet's rate; counted as
//     connection_rate_subnet.
//   - limits.login_rate / login_burst and subnet_login_rate /
//     subnet_login_burst: logins (a Login Start read) per second per
//     address and per subnet; a login past either gets a disconnect
//     message, counted as login_rate or login_rate_subnet.
//   - limits.max_sessions_per_subnet: sessions open at once per subnet;
//     past it a connection is refused at accept, counted as
//     max_sessions_per_subnet.
//
// An address is its /32 (IPv4) or its /64 (IPv6, as one host commonly holds
// a whole /64): address_prefix_ipv4 and address_prefix_ipv6. A subnet is its
// /24 or /48: subnet_prefix_ipv4 and subnet_prefix_ipv6. A connection takes a
// token from both its address's and its subnet's bucket, and only when
// both have one: a refusal costs neither.
//
// The buckets are GCRA (one theoretical arrival time per bucket, the same
// decisions as a token bucket): a bucket that has refilled holds nothing a
// new one would not, so it is forgotten. They live on the proxy, across
// reloads (a reload changes rates and bursts, not the buckets; one that
// changes a prefix length starts the buckets of the new keys full), in
// limiterShards shards chosen by a seeded hash of the subnet, each a map
// behind its own small mutex: an accept locks one shard for two map
// lookups, on whichever loop it runs, and the loops rarely meet on one
// shard. Per-loop tables would not do: one address's connections are
// spread over the loops.
//
// Memory is bounded, and one subnet cannot take the table from the others
// (table.go): the shards together hold at most limits.rate_limit_addresses
// buckets (addresses' and subnets'), and one subnet at most
// limits.rate_limit_per_subnet address buckets; an address of a subnet at
// that cap gets no bucket of its own, so only its subnet's bucket limits
// it (counted as untracked). A shard that is full when a new bucket is
// needed first drops its refilled buckets, then, if it is still over 7/8
// full, drops address buckets of the subnets with the most of them down to
// 7/8, counted as evictions. An evicted address starts again with a full
// bucket, so a flood from more subnets than the table holds gets at most a
// burst per address more than the limits say; the subnet's own bucket is
// kept while it has addresses. The subnet session counts are entries only
// while a subnet has sessions open, so they are bounded by the sessions.

// limiterShards is the number of shards of the limiter tables; a power of 2.
const limiterShards = 64

// Limiter holds the per-address and per-subnet buckets and the per-subnet
// session counts. Its methods may be called from any goroutine.
type Limiter struct {
	seed  maphash.Seed
	start time.Time
	// now is the limiter's clock, monotonic nanoseconds (so that a step of
	// the wall clock cannot hold buckets empty); see SetClock.
	now func() int64

	shards    [limiterShards]limiterShard
	evicted   atomic.Int64
	untracked atomic.Int64
}

// Key is the key of an address's or a subnet's buckets, or of a subnet's
// session count: the address masked to its prefix, in 16-byte form.
type Key = [16]byte

// Source is the keys of a client address: its own buckets' and its
// subnet's (buckets and session count).
type Source struct{ Addr, Subnet Key }

// Rate is a token bucket's refill, per second, and burst; a PerSecond of 0
// turns the bucket off.
type Rate struct {
	PerSecond float64
	Burst     int
}

// TableBounds bound the buckets: Capacity of them in all, PerSubnet
// address buckets in one subnet.
type TableBounds struct{ Capacity, PerSubnet int }

// Verdict is what Take decided.
type Verdict uint8

// Take's verdicts.
const (
	Admitted    Verdict = iota // a token was taken from each bucket that is on
	AddressFull                // the address's bucket is empty
	SubnetFull                 // the subnet's bucket is empty
)

// New returns an empty limiter on the monotonic clock.
func New() *Limiter {
	l := &Limiter{seed: maphash.MakeSeed(), start: time.Now()}
	l.now = func() int64 { return int64(time.Since(l.start)) + 1 }
	for i := range l.shards {
		sh := &l.shards[i]
		sh.rates = map[Key]rateEntry{}
		sh.subnetRates = map[Key]subnetEntry{}
		sh.subnets = map[Key]int32{}
	}
	return l
}

// Now returns the limiter's clock, in nanoseconds.
func (l *Limiter) Now() int64 { return l.now() }

// SetClock replaces the limiter's clock; tests call it before the limiter
// is used.
func (l *Limiter) SetClock(now func() int64) { l.now = now }

// shard returns the shard of the subnet with key subnet: an address's
// buckets are in its subnet's shard, so that one lock covers both and the
// subnet's count of address buckets stays with them.
func (l *Limiter) shard(subnet *Key) *limiterShard {
	return &l.shards[maphash.Bytes(l.seed, subnet[:])&(limiterShards-1)]
}

// prefixKey is a masked to v4 bits (IPv4) or v6 bits (IPv6), in 16-byte
// form.
func prefixKey(a netip.Addr, v4, v6 int) Key {
	bits := v6
	if a.Is4() {
		bits = v4
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return a.As16() // not reached for a validated prefix length
	}
	return p.Addr().As16()
}

// AddressKey is the bucket key of address a: by default itself for IPv4,
// its /64 for IPv6 (lim's address prefix lengths).
func AddressKey(a netip.Addr, lim *config.Limits) Key {
	return prefixKey(a, lim.AddressPrefixIPv4, lim.AddressPrefixIPv6)
}

// SubnetKey is the key of the subnet of a, whose buckets and sessions are
// counted together, by lim's subnet prefix lengths.
func SubnetKey(a netip.Addr, lim *config.Limits) Key {
	return prefixKey(a, lim.SubnetPrefixIPv4, lim.SubnetPrefixIPv6)
}

// SourceKeys returns the keys of a under lim.
func SourceKeys(a netip.Addr, lim *config.Limits) Source {
	return Source{Addr: AddressKey(a, lim), Subnet: SubnetKey(a, lim)}
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

// TakeConnection takes a connection's tokens for src at lim's rates (the
// address's and the subnet's), now.
func (l *Limiter) TakeConnection(src Source, lim *config.Limits) Verdict {
	return l.Take(src, false, Rate{lim.ConnectionRate, lim.ConnectionBurst},
		Rate{lim.SubnetConnectionRate, lim.SubnetConnectionBurst}, boundsOf(lim), l.Now())
}

// TakeLogin takes a login's tokens for src at lim's rates, now.
func (l *Limiter) TakeLogin(src Source, lim *config.Limits) Verdict {
	return l.Take(src, true, Rate{lim.LoginRate, lim.LoginBurst},
		Rate{lim.SubnetLoginRate, lim.SubnetLoginBurst}, boundsOf(lim), l.Now())
}

// boundsOf returns the bounds of the table under lim.
func boundsOf(lim *config.Limits) TableBounds {
	return TableBounds{Capacity: lim.RateLimitAddresses, PerSubnet: lim.RateLimitPerSubnet}
}

// Tracked returns how many buckets (addresses' and subnets') the table
// holds now.
func (l *Limiter) Tracked() int64 {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.rates) + len(sh.subnetRates)
		sh.mu.Unlock()
	}
	return int64(n)
}

// Evicted counts the buckets dropped before they had refilled, to keep
// the table within its capacity.
func (l *Limiter) Evicted() int64 { return l.evicted.Load() }

// Untracked counts the takes of addresses that got no bucket of their own
// because their subnet had TableBounds.PerSubnet already: only their
// subnet's bucket limited them.
func (l *Limiter) Untracked() int64 { return l.untracked.Load() }

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
