package ratelimit

import (
	"net/netip"
	"testing"
	"time"
)

// TestSubnetBucketCatchesRotatingAddresses: 20 connections each from 50
// addresses of one /24, each address within its own burst, get no more
// than the subnet's burst between them; a refusal by the subnet costs the
// address nothing, and another /24 is not touched.
func TestSubnetBucketCatchesRotatingAddresses(t *testing.T) {
	l := New()
	now := int64(time.Hour)
	addr, subnet := Rate{10, 20}, Rate{40, 80}
	bounds := TableBounds{Capacity: 65536, PerSubnet: 256}
	admitted, bySubnet := 0, 0
	for host := 2; host <= 51; host++ {
		src := keysOf(netip.AddrFrom4([4]byte{127, 0, 0, byte(host)}))
		for range 20 {
			switch l.Take(src, false, addr, subnet, bounds, now) {
			case Admitted:
				admitted++
			case SubnetFull:
				bySubnet++
			default:
				t.Fatalf("127.0.0.%d refused by its address bucket within its burst", host)
			}
		}
	}
	if admitted != 80 || bySubnet != 920 {
		t.Fatalf("%d admitted and %d refused by the subnet, want 80 (its burst) and 920", admitted, bySubnet)
	}
	// 127.0.0.60 has taken nothing: once the subnet refills by one token
	// (25 ms at 40/s) it gets it.
	fresh := keysOf(netip.MustParseAddr("127.0.0.60"))
	if got := l.Take(fresh, false, addr, subnet, bounds, now+int64(25*time.Millisecond)); got != Admitted {
		t.Fatalf("a new address after the subnet refilled one token: %v", got)
	}
	if got := l.Take(keysOf(netip.MustParseAddr("127.0.1.2")), false, addr, subnet, bounds, now); got != Admitted {
		t.Fatalf("another /24: %v", got)
	}
}

// TestOneSubnetCannotFloodTheTable: 200,000 /64s of one /48, more than the
// table holds, with the subnet rate off (the worst case), fill at most
// rate_limit_per_subnet entries and evict nothing: an unrelated address
// keeps its empty bucket, and the /64s past the cap share one bucket.
func TestOneSubnetCannotFloodTheTable(t *testing.T) {
	l := New()
	now := int64(time.Hour)
	addr := Rate{0.01, 2}
	bounds := TableBounds{Capacity: 65536, PerSubnet: 256}
	victim := keysOf(netip.MustParseAddr("2001:db8:ffff:1::7"))
	for range 2 {
		l.Take(victim, false, addr, Rate{}, bounds, now)
	}
	if got := l.Take(victim, false, addr, Rate{}, bounds, now); got != AddressFull {
		t.Fatalf("the victim's bucket after its burst: %v, want AddressFull", got)
	}
	admitted := 0
	for i := range 200_000 {
		a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, byte(i >> 8), byte(i), 15: 1})
		if l.Take(keysOf(a), false, addr, Rate{}, bounds, now) == Admitted {
			admitted++
		}
	}
	if n := l.Tracked(); n > 256+1+2 {
		t.Fatalf("the table holds %d entries after a /48 flood, want at most its cap of 256 addresses, its subnet, and the victim's two", n)
	}
	if admitted != 256*2+2 || l.Evicted() != 0 {
		t.Fatalf("%d of the flood admitted, %d evictions; want 514 (256 buckets' bursts and the overflow's) and none",
			admitted, l.Evicted())
	}
	if l.Untracked() == 0 {
		t.Fatal("no take was counted as untracked")
	}
	if got := l.Take(victim, false, addr, Rate{}, bounds, now); got != AddressFull {
		t.Fatalf("the victim's bucket after the flood: %v, want still AddressFull (evicted, it would be full)", got)
	}
}

// TestEvictionTakesFromTheHeaviestSubnet: when a shard is full, the
// buckets dropped are those of the subnets with the most of them; a
// subnet with few keeps them.
func TestEvictionTakesFromTheHeaviestSubnet(t *testing.T) {
	l := New()
	now := int64(time.Hour)
	addr := Rate{0.01, 1} // one take empties a bucket
	// 100 entries a shard; up to 10 addresses a subnet.
	bounds := TableBounds{Capacity: 100 * limiterShards, PerSubnet: 10}
	// Subnets (IPv4 /24s) that share one shard.
	var same []netip.Addr
	var target *limiterShard
	for i := 0; len(same) < 15; i++ {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0})
		k := keysOf(a).Subnet
		if target == nil {
			target = l.shard(&k)
		}
		if l.shard(&k) == target {
			same = append(same, a)
		}
	}
	host := func(subnet netip.Addr, h int) Source {
		b := subnet.As4()
		b[3] = byte(h)
		return keysOf(netip.AddrFrom4(b))
	}
	// Five light subnets of two addresses each: 15 entries.
	for _, s := range same[:5] {
		for h := 1; h <= 2; h++ {
			l.Take(host(s, h), false, addr, Rate{}, bounds, now)
		}
	}
	// Ten flooding subnets, ten addresses each: 110 entries more, so the
	// shard shrinks, and the flood's subnets stay the heaviest.
	for _, s := range same[5:] {
		for h := 1; h <= 10; h++ {
			if got := l.Take(host(s, h), false, addr, Rate{}, bounds, now); got != Admitted {
				t.Fatalf("a new address of a flooding subnet: %v", got)
			}
		}
	}
	if l.Evicted() == 0 {
		t.Fatal("the shard never shrank")
	}
	if n := len(target.rates) + len(target.subnetRates); n > 100 {
		t.Fatalf("the shard holds %d entries, over its 100", n)
	}
	for _, s := range same[:5] {
		for h := 1; h <= 2; h++ {
			if got := l.Take(host(s, h), false, addr, Rate{}, bounds, now); got != AddressFull {
				t.Fatalf("a light subnet's address %v lost its empty bucket to the flood: %v", s, got)
			}
		}
	}
}

// TestSubnetOnlyRate: with the address rates off, the subnet's bucket
// alone limits, and its entries are bounded too.
func TestSubnetOnlyRate(t *testing.T) {
	l := New()
	now := int64(time.Hour)
	bounds := TableBounds{Capacity: 1024, PerSubnet: 4}
	src := keysOf(netip.MustParseAddr("198.51.100.1"))
	for i := range 3 {
		if got := l.Take(src, true, Rate{}, Rate{1, 3}, bounds, now); got != Admitted {
			t.Fatalf("login %d of the subnet's burst of 3: %v", i+1, got)
		}
	}
	other := keysOf(netip.MustParseAddr("198.51.100.200"))
	if got := l.Take(other, true, Rate{}, Rate{1, 3}, bounds, now); got != SubnetFull {
		t.Fatalf("another address of the subnet past its burst: %v, want SubnetFull", got)
	}
	if got := l.Take(other, false, Rate{}, Rate{1, 3}, bounds, now); got != Admitted {
		t.Fatalf("the connection bucket is separate from the login one: %v", got)
	}
	for i := range 10_000 {
		l.Take(keysOf(netip.AddrFrom4([4]byte{byte(11 + i>>16), byte(i >> 8), byte(i), 1})), false, Rate{}, Rate{0.01, 1}, bounds, now)
	}
	if n := l.Tracked(); n > 1024 {
		t.Fatalf("%d subnet entries, over the capacity of 1024", n)
	}
}

// BenchmarkTake: one accept's take from a known address's and its
// subnet's buckets; it allocates nothing.
func BenchmarkTake(b *testing.B) {
	l := New()
	src := keysOf(netip.MustParseAddr("2001:db8:1:2::3"))
	bounds := TableBounds{Capacity: 65536, PerSubnet: 256}
	now := int64(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		now += int64(time.Second)
		if l.Take(src, false, Rate{10, 20}, Rate{40, 80}, bounds, now) != Admitted {
			b.Fatal("refused")
		}
	}
}
