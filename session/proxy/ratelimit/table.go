package ratelimit

import "sync"

// limiterShard is one shard of the tables: the buckets of the subnets whose
// keys hash to it, with their addresses' buckets.
type limiterShard struct {
	mu          sync.Mutex
	rates       map[Key]rateEntry   // address buckets, by address key
	subnetRates map[Key]subnetEntry // subnet buckets, by subnet key
	subnets     map[Key]int32       // sessions open, by subnet key
	// heavy is shrink's scratch list of the subnets that have address
	// buckets, kept for its capacity.
	heavy []heavySubnet
	_     [8]byte // to 64 bytes, a cache line
}

// rateEntry is an address's two buckets: the theoretical arrival time
// (limiter clock) of its next connection and login, and the subnet it is
// counted in (in this shard). A bucket whose time is not after now is full.
type rateEntry struct {
	conn, login int64
	subnet      Key
}

// subnetEntry is a subnet's two buckets, the two its addresses past the
// cap share (overConn, overLogin), and how many address buckets of it the
// shard holds; it stays while it has any, whatever its own buckets hold,
// so that evicting addresses never refills their subnet.
type subnetEntry struct {
	conn, login         int64
	overConn, overLogin int64
	tracked             int32
	evict               int32 // during shrink: how many of its addresses to drop
}

// refilled reports whether the subnet's buckets are all full at now.
func (se *subnetEntry) refilled(now int64) bool {
	return refilled(se.conn, se.login, now) && refilled(se.overConn, se.overLogin, now)
}

// heavySubnet is a subnet with address buckets, as shrink weighs them.
type heavySubnet struct {
	key     Key
	tracked int32
}

// refilled reports whether both buckets with theoretical arrival times
// conn and login are full at now.
func refilled(conn, login, now int64) bool { return conn <= now && login <= now }

// Take takes a token, at now, from the connection buckets (login false) or
// the login buckets of src: its address's, refilling at addr, and its
// subnet's, refilling at subnet. It takes none and says which was empty
// when either is; a bucket whose rate is 0 is not used. bounds bound the
// table: an address new to a subnet that has bounds.PerSubnet address
// buckets already shares the subnet's overflow bucket (at the address
// rate) with the other addresses past the cap.
func (l *Limiter) Take(src Source, login bool, addr, subnet Rate, bounds TableBounds, now int64) Verdict {
	addrOn, subnetOn := addr.PerSecond > 0, subnet.PerSecond > 0
	if !addrOn && !subnetOn {
		return Admitted
	}
	sh := l.shard(&src.Subnet)
	sh.mu.Lock()
	var e rateEntry
	known := false
	if addrOn {
		e, known = sh.rates[src.Addr]
	}
	se, subnetKnown := sh.subnetRates[src.Subnet]
	overflow := addrOn && !known && int(se.tracked) >= bounds.PerSubnet
	var addrTAT *int64
	switch {
	case overflow:
		addrTAT = tatOf(&se.overConn, &se.overLogin, login)
	case addrOn:
		addrTAT = tatOf(&e.conn, &e.login, login)
	}
	var addrNext, subnetNext int64
	if addrOn {
		var ok bool
		if addrNext, ok = next(*addrTAT, addr, now); !ok {
			sh.mu.Unlock()
			return AddressFull
		}
	}
	if subnetOn {
		var ok bool
		if subnetNext, ok = next(*tatOf(&se.conn, &se.login, login), subnet, now); !ok {
			sh.mu.Unlock()
			return SubnetFull
		}
	}
	newAddr := addrOn && !known && !overflow
	if limit := max(bounds.Capacity/limiterShards, 1); (newAddr || !subnetKnown) && len(sh.rates)+len(sh.subnetRates) >= limit {
		l.evicted.Add(int64(sh.shrink(now, limit)))
		// shrink may have dropped some of the subnet's addresses, or (when
		// it had none) its entry; an overflow's subnet keeps its entry.
		se = sh.subnetRates[src.Subnet]
	}
	if subnetOn {
		*tatOf(&se.conn, &se.login, login) = subnetNext
	}
	switch {
	case overflow:
		*tatOf(&se.overConn, &se.overLogin, login) = addrNext
		l.untracked.Add(1)
	case newAddr:
		e.subnet = src.Subnet
		se.tracked++
		fallthrough
	case known:
		*tatOf(&e.conn, &e.login, login) = addrNext
		sh.rates[src.Addr] = e
	}
	sh.subnetRates[src.Subnet] = se
	sh.mu.Unlock()
	return Admitted
}

// tatOf returns the connection bucket's time (login false) or the login
// bucket's.
func tatOf(conn, loginTAT *int64, login bool) *int64 {
	if login {
		return loginTAT
	}
	return conn
}

// next returns a bucket's theoretical arrival time once a token is taken
// at now from it (its time now is tat); ok is false when it is empty.
func next(tat int64, r Rate, now int64) (int64, bool) {
	iv := Interval(r.PerSecond)
	t := max(tat, now)
	if t-now > int64(r.Burst-1)*iv {
		return 0, false
	}
	return t + iv, true
}

// shrink makes room in a full shard: it drops the refilled buckets (a
// subnet's only once it has no address buckets), then address buckets of
// the subnets with the most of them, then subnets' own buckets (only when
// too few address buckets remain: the address rates are off), until at
// most 7/8 of limit remain. It returns how many that were not refilled it
// dropped.
func (sh *limiterShard) shrink(now int64, limit int) int {
	for k, e := range sh.rates {
		if refilled(e.conn, e.login, now) {
			delete(sh.rates, k)
			sh.untrack(e.subnet)
		}
	}
	sh.dropIdleSubnets(now)
	keep := min(limit-1, limit-limit/8)
	over := len(sh.rates) + len(sh.subnetRates) - keep
	if over <= 0 {
		return 0
	}
	evicted := sh.evictHeaviest(over)
	sh.dropIdleSubnets(now) // those whose last address went
	for k, se := range sh.subnetRates {
		if len(sh.rates)+len(sh.subnetRates) <= keep {
			break
		}
		if se.tracked == 0 {
			delete(sh.subnetRates, k)
			evicted++
		}
	}
	return evicted
}

// dropIdleSubnets drops the subnets' buckets that have refilled and have
// no address buckets left.
func (sh *limiterShard) dropIdleSubnets(now int64) {
	for k, se := range sh.subnetRates {
		if se.tracked == 0 && se.refilled(now) {
			delete(sh.subnetRates, k)
		}
	}
}

// untrack counts one address bucket of subnet fewer.
func (sh *limiterShard) untrack(subnet Key) {
	if se, ok := sh.subnetRates[subnet]; ok {
		se.tracked--
		sh.subnetRates[subnet] = se
	}
}

// evictHeaviest drops up to n address buckets, taking them from the
// subnets with the most: it lowers the largest subnets to a common level,
// as low as it must, so that a subnet flooding the table loses its own
// buckets first and the others keep theirs. It returns how many it
// dropped.
func (sh *limiterShard) evictHeaviest(n int) int {
	sh.heavy = sh.heavy[:0]
	total, most := 0, int32(0)
	for k, se := range sh.subnetRates {
		if se.tracked > 0 {
			sh.heavy = append(sh.heavy, heavySubnet{k, se.tracked})
			total += int(se.tracked)
			most = max(most, se.tracked)
		}
	}
	n = min(n, total)
	if n == 0 {
		return 0
	}
	// The highest level whose excess (what the subnets hold above it) is
	// at least n: a binary search, as the excess falls with the level.
	excess := func(level int32) int {
		sum := 0
		for _, h := range sh.heavy {
			sum += int(max(h.tracked-level, 0))
		}
		return sum
	}
	lo, hi := int32(0), most // excess(lo) >= n > excess(hi)
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; excess(mid) >= n {
			lo = mid
		} else {
			hi = mid
		}
	}
	// Down to hi each, then one more from as many at hi as are still needed.
	rest := n - excess(hi)
	for _, h := range sh.heavy {
		q := max(h.tracked-hi, 0)
		if rest > 0 && h.tracked >= hi {
			q++
			rest--
		}
		if q > 0 {
			se := sh.subnetRates[h.key]
			se.evict = q
			sh.subnetRates[h.key] = se
		}
	}
	dropped := 0
	for k, e := range sh.rates {
		se := sh.subnetRates[e.subnet]
		if se.evict == 0 {
			continue
		}
		se.evict--
		se.tracked--
		sh.subnetRates[e.subnet] = se
		delete(sh.rates, k)
		dropped++
	}
	return dropped
}
