package ratelimit

import (
	"net/netip"
	"testing"
	"time"

	"github.com/tidegate/tidegate/session/proxy/config"
)

// TestBucketTakesBurstThenRate: a bucket gives its burst at once, then one
// token per interval; a refused take costs nothing; a refilled bucket is
// as good as a new one.
func TestBucketTakesBurstThenRate(t *testing.T) {
	l := New()
	k := keysOf(netip.MustParseAddr("192.0.2.1"))
	now := int64(time.Hour)
	take := func(at int64) bool { return l.Take(k, false, Rate{10, 3}, Rate{}, bounds1024, at) == Admitted }
	for i := range 3 {
		if !take(now) {
			t.Fatalf("take %d of the burst of 3 refused", i+1)
		}
	}
	if take(now) || take(now+int64(99*time.Millisecond)) {
		t.Fatal("a take past the burst, before 100 ms, was allowed")
	}
	if !take(now+int64(100*time.Millisecond)) || take(now+int64(100*time.Millisecond)) {
		t.Fatal("want exactly one token after 100 ms at 10/s")
	}
	// The login bucket of the same address is separate.
	if l.Take(k, true, Rate{1, 1}, Rate{}, bounds1024, now) != Admitted || l.Take(k, true, Rate{1, 1}, Rate{}, bounds1024, now) != AddressFull {
		t.Fatal("login bucket: want one take of a burst of 1")
	}
	later := now + int64(10*time.Second)
	for i := range 3 {
		if !take(later) {
			t.Fatalf("after refilling, take %d of 3 refused", i+1)
		}
	}
}

// TestLimiterKeys: IPv4 addresses have their own buckets, IPv6 ones share
// their /64's; subnets are /24 and /48 (or as configured); an IPv4-mapped
// IPv6 address is its IPv4 address.
func TestLimiterKeys(t *testing.T) {
	a := func(s string) netip.Addr { x, ok := SourceAddr(s); _ = ok; return x }
	def, _, err := config.Load("") // the embedded default states every default
	if err != nil {
		t.Fatal(err)
	}
	lim := def.Limits
	for _, tc := range []struct {
		x, y           string
		sameRate, same bool
	}{
		{"192.0.2.1", "192.0.2.2", false, true},
		{"192.0.2.1", "192.0.3.1", false, false},
		{"::ffff:192.0.2.1", "192.0.2.1", true, true},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2:bbbb::2", true, true},
		{"2001:db8:1:2::1", "2001:db8:1:3::1", false, true},
		{"2001:db8:1::1", "2001:db8:2::1", false, false},
		{"fe80::1%eth0", "fe80::1", true, true},
	} {
		x, y := a(tc.x), a(tc.y)
		if got := AddressKey(x, &lim) == AddressKey(y, &lim); got != tc.sameRate {
			t.Errorf("%s and %s share a rate bucket: %v, want %v", tc.x, tc.y, got, tc.sameRate)
		}
		if got := SubnetKey(x, &lim) == SubnetKey(y, &lim); got != tc.same {
			t.Errorf("%s and %s share a subnet: %v, want %v", tc.x, tc.y, got, tc.same)
		}
	}
	lim.SubnetPrefixIPv4 = 32
	if SubnetKey(a("192.0.2.1"), &lim) == SubnetKey(a("192.0.2.2"), &lim) {
		t.Error("with subnet_prefix_ipv4 32 two addresses share a subnet")
	}
	if _, ok := SourceAddr(""); ok {
		t.Error("an empty address parsed")
	}
}

// TestLimiterTableStaysBounded: a flood from more addresses than the table
// holds keeps it at its capacity, dropping refilled buckets before live
// ones; only live ones dropped count as evictions.
func TestLimiterTableStaysBounded(t *testing.T) {
	l := New()
	const capacity = 1024
	now := int64(time.Hour)
	// Each in a /24 of its own: addresses of one subnet past its cap share
	// a bucket (TestOneSubnetCannotFloodTheTable).
	addr := func(i int) Source {
		return keysOf(netip.AddrFrom4([4]byte{byte(10 + i>>16), byte(i >> 8), byte(i), 1}))
	}
	take := func(src Source, rate float64) bool {
		return l.Take(src, false, Rate{rate, 2}, Rate{}, TableBounds{capacity, 4}, now) == Admitted
	}
	// Buckets that refill within the second: when the table fills a second
	// later, they are dropped without evictions. (Each address takes two
	// entries, its own and its subnet's; a quarter of the table leaves room
	// in every shard.)
	for i := range capacity / 4 {
		take(addr(i), 10)
	}
	now += int64(time.Second)
	for i := range 100_000 {
		if !take(addr(capacity+i), 0.01) {
			t.Fatalf("the first take of a new address %d was refused", i)
		}
		if i%1000 != 999 {
			continue
		}
		if n := l.Tracked(); n > capacity {
			t.Fatalf("after %d new addresses the table holds %d, over %d", i+1, n, capacity)
		}
	}
	ev := l.Evicted()
	if ev == 0 || ev > 100_000 {
		t.Fatalf("%d evictions for 100,000 live buckets in a table of %d", ev, capacity)
	}
	// The most recent addresses are still limited.
	latest := addr(capacity + 99_999) // took 1 of its burst of 2 above
	if second := take(latest, 0.01); !second || take(latest, 0.01) {
		t.Fatal("the latest address: want its second take allowed and a third refused")
	}
}

// TestSubnetCounts: a subnet's sessions are counted until they leave;
// entries go with their last session.
func TestSubnetCounts(t *testing.T) {
	l := New()
	k := SubnetKey(netip.MustParseAddr("198.51.100.7"), &config.Limits{SubnetPrefixIPv4: 24})
	for i := range 3 {
		if !l.Enter(k, 3) {
			t.Fatalf("session %d of 3 refused", i+1)
		}
	}
	if l.Enter(k, 3) {
		t.Fatal("a 4th session of a subnet capped at 3 admitted")
	}
	if !l.Enter(k, 0) {
		t.Fatal("a cap of 0 refused")
	}
	for range 4 {
		l.Leave(k)
	}
	if n := len(l.shard(&k).subnets); n != 0 {
		t.Fatalf("%d subnet entries left after every session left", n)
	}
}

// bounds1024 bounds a test's table to the smallest capacity the
// configuration allows.
var bounds1024 = TableBounds{Capacity: 1024, PerSubnet: 4}

// keysOf returns the keys of a under the default prefix lengths.
func keysOf(a netip.Addr) Source {
	return SourceKeys(a, &config.Limits{AddressPrefixIPv4: 32, AddressPrefixIPv6: 64, SubnetPrefixIPv4: 24, SubnetPrefixIPv6: 48})
}
