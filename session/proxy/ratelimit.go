package proxy

import (
	"hash/maphash"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
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
// new one would not, so it is forgotten. They live on the Proxy, across
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

// sourceLimiter holds the per-address buckets and the per-subnet session
// counts.
type sourceLimiter struct {
	seed  maphash.Seed
	start time.Time
	// now is the limiter's clock, monotonic nanoseconds (so that a step of
	// the wall clock cannot hold buckets empty). Tests may replace it
	// before the proxy starts.
	now func() int64

	shards  [limiterShards]limiterShard
	evicted atomic.Int64

	// Refusal logs of the flood-prone reasons: when the next warning may be
	// written, and how many were left out since the last.
	logNext, logSkipped [numReasons]atomic.Int64
}

// limiterShard is one shard of the tables.
type limiterShard struct {
	mu      sync.Mutex
	rates   map[[16]byte]rateEntry // by rateKey
	subnets map[[16]byte]int32     // sessions open, by subnetKey
	_       [40]byte
}

// rateEntry is an address's two buckets: the theoretical arrival time
// (limiter clock) of its next connection and login. A bucket whose time is
// not after now is full.
type rateEntry struct{ conn, login int64 }

func newSourceLimiter() *sourceLimiter {
	l := &sourceLimiter{seed: maphash.MakeSeed(), start: time.Now()}
	l.now = func() int64 { return int64(time.Since(l.start)) + 1 }
	for i := range l.shards {
		l.shards[i].rates = map[[16]byte]rateEntry{}
		l.shards[i].subnets = map[[16]byte]int32{}
	}
	return l
}

func (l *sourceLimiter) shard(key *[16]byte) *limiterShard {
	return &l.shards[maphash.Bytes(l.seed, key[:])&(limiterShards-1)]
}

// rateKey is the bucket key of an address: itself for IPv4, its /64 for
// IPv6, in 16-byte form.
func rateKey(a netip.Addr) [16]byte {
	k := a.As16()
	if !a.Is4() {
		clear(k[8:])
	}
	return k
}

// subnetKey is the key of the subnet of a whose sessions are counted
// together.
func subnetKey(a netip.Addr, lim *config.Limits) [16]byte {
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

// sourceAddr parses a client address as admit gets it; ok is false for
// one that is not an IP address (nothing is limited then).
func sourceAddr(ip string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// interval is the time one token of rate (per second) stands for.
func interval(rate float64) int64 {
	return max(int64(float64(time.Second)/rate), 1)
}

// take takes a token, at now, from the connection bucket (login false) or
// the login bucket of the address with key k, refilling at rate per second
// up to burst; it reports false when the bucket is empty. capacity bounds
// the addresses tracked.
func (l *sourceLimiter) take(k [16]byte, login bool, rate float64, burst, capacity int, now int64) bool {
	iv := interval(rate)
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

// enter counts a session of the subnet with key k; it refuses (reporting
// false, counting nothing) when the subnet already has limit sessions,
// unless limit is 0.
func (l *sourceLimiter) enter(k [16]byte, limit int) bool {
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

// leave undoes enter.
func (l *sourceLimiter) leave(k [16]byte) {
	sh := l.shard(&k)
	sh.mu.Lock()
	if n := sh.subnets[k] - 1; n > 0 {
		sh.subnets[k] = n
	} else {
		delete(sh.subnets, k)
	}
	sh.mu.Unlock()
}

// tracked returns how many addresses have buckets now.
func (l *sourceLimiter) tracked() int64 {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.rates)
		sh.mu.Unlock()
	}
	return int64(n)
}

// admitSource applies the per-address limits of gen to a new connection
// from ip: the connection rate, then the subnet's session cap. When it
// admits, the session is counted in its subnet until releaseSource.
func (p *Proxy) admitSource(gen *generation, ip string) (reason, bool) {
	a, ok := sourceAddr(ip)
	if !ok {
		return 0, true
	}
	lim := &gen.cfg.Limits
	if lim.ConnectionRate > 0 && !p.src.take(rateKey(a), false, lim.ConnectionRate, lim.ConnectionBurst, lim.RateLimitAddresses, p.src.now()) {
		return reasonConnectionRate, false
	}
	if !p.src.enter(subnetKey(a, lim), lim.MaxSessionsPerSubnet) {
		return reasonMaxSessionsPerSubnet, false
	}
	return 0, true
}

// adoptSource counts a session taken over from another process in its
// subnet, without refusing it: it was admitted there.
func (p *Proxy) adoptSource(gen *generation, ip string) {
	if a, ok := sourceAddr(ip); ok {
		p.src.enter(subnetKey(a, &gen.cfg.Limits), 0)
	}
}

// releaseSource undoes admitSource (or adoptSource) under the generation
// that admitted the session.
func (p *Proxy) releaseSource(gen *generation, ip string) {
	if a, ok := sourceAddr(ip); ok {
		p.src.leave(subnetKey(a, &gen.cfg.Limits))
	}
}

// admitLogin applies the login rate of gen to a login from ip.
func (p *Proxy) admitLogin(gen *generation, ip string) (reason, bool) {
	lim := &gen.cfg.Limits
	if lim.LoginRate <= 0 {
		return 0, true
	}
	a, ok := sourceAddr(ip)
	if ok && !p.src.take(rateKey(a), true, lim.LoginRate, lim.LoginBurst, lim.RateLimitAddresses, p.src.now()) {
		return reasonLoginRate, false
	}
	return 0, true
}

// refusalEvent returns the log event for a refusal by r: a warning; for the
// per-address limits, which a flood trips many times a second, at most one
// warning a second per reason (with how many were left out since, as
// "suppressed") and debug events for the others.
func (p *Proxy) refusalEvent(r reason) *zerolog.Event {
	switch r {
	case reasonConnectionRate, reasonLoginRate, reasonMaxSessionsPerSubnet:
	default:
		return p.log.Warn()
	}
	now := p.src.now()
	if next := p.src.logNext[r].Load(); now >= next && p.src.logNext[r].CompareAndSwap(next, now+int64(time.Second)) {
		ev := p.log.Warn()
		if n := p.src.logSkipped[r].Swap(0); n > 0 {
			ev = ev.Int64("suppressed", n)
		}
		return ev
	}
	p.src.logSkipped[r].Add(1)
	return p.log.Debug()
}
