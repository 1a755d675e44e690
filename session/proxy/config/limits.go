package config

import (
	"math"

	"github.com/tidegate/tidegate/protocol/mc"
)

// Bounds of the per-address limits.
const (
	minRate, maxRate  = 0.01, 1e6 // per second
	maxBurst          = 1_000_000
	minLimitAddresses = 1024 // 16 a shard
	maxLimitAddresses = 1 << 24
)

// checkSourceLimits reports the problems of the per-address limits.
func checkSourceLimits(bad func(path, format string, args ...any), l Limits) {
	for _, r := range []struct {
		name  string
		rate  float64
		burst int
	}{
		{"connection", l.ConnectionRate, l.ConnectionBurst},
		{"login", l.LoginRate, l.LoginBurst},
		{"subnet_connection", l.SubnetConnectionRate, l.SubnetConnectionBurst},
		{"subnet_login", l.SubnetLoginRate, l.SubnetLoginBurst},
	} {
		path := "limits." + r.name + "_rate"
		switch {
		case r.rate == 0:
			continue
		case r.rate < 0 || math.IsNaN(r.rate):
			bad(path, "%v is negative (0 turns it off)", r.rate)
			continue
		case r.rate < minRate || r.rate > maxRate || math.IsInf(r.rate, 0):
			bad(path, "%v per second: want 0.01 to 1000000, or 0 to turn it off", r.rate)
			continue
		}
		if r.burst < 1 || r.burst > maxBurst {
			bad("limits."+r.name+"_burst", "%d: want 1 to %d", r.burst, maxBurst)
		}
	}
	if l.MaxSessionsPerSubnet < 0 || l.MaxSessionsPerSubnet > math.MaxInt32 {
		bad("limits.max_sessions_per_subnet", "%d: want 0 (no cap) to %d", l.MaxSessionsPerSubnet, math.MaxInt32)
	}
	checkPrefixes(bad, l)
	if _, err := mc.NewUsernamePolicy(l.UsernamePattern); err != nil {
		bad("limits.username_pattern", "%v", err)
	}
	if l.RateLimitAddresses < minLimitAddresses || l.RateLimitAddresses > maxLimitAddresses {
		bad("limits.rate_limit_addresses", "%d: want %d to %d", l.RateLimitAddresses, minLimitAddresses, maxLimitAddresses)
	} else if most := l.RateLimitAddresses / subnetShareOfTable; l.RateLimitPerSubnet < 1 || l.RateLimitPerSubnet > most {
		bad("limits.rate_limit_per_subnet", "%d: want 1 to %d (rate_limit_addresses / %d, so that one subnet cannot crowd the others out of the table)",
			l.RateLimitPerSubnet, most, subnetShareOfTable)
	}
}

// subnetShareOfTable is how many times the address buckets one subnet may
// hold go into the table: ratelimit shards its table 64 ways by subnet, so
// a subnet at its cap fills at most a quarter of its shard.
const subnetShareOfTable = 256

// checkPrefixes reports prefix lengths out of range, and a subnet that is
// narrower than an address (each address must fall in one subnet).
func checkPrefixes(bad func(path, format string, args ...any), l Limits) {
	for _, p := range []struct {
		family       string
		subnet, addr int
		most         int
	}{
		{"ipv4", l.SubnetPrefixIPv4, l.AddressPrefixIPv4, 32},
		{"ipv6", l.SubnetPrefixIPv6, l.AddressPrefixIPv6, 128},
	} {
		subnetOK, addrOK := p.subnet >= 1 && p.subnet <= p.most, p.addr >= 1 && p.addr <= p.most
		if !subnetOK {
			bad("limits.subnet_prefix_"+p.family, "%d: want a prefix length of 1 to %d", p.subnet, p.most)
		}
		if !addrOK {
			bad("limits.address_prefix_"+p.family, "%d: want a prefix length of 1 to %d", p.addr, p.most)
		}
		if subnetOK && addrOK && p.subnet > p.addr {
			bad("limits.subnet_prefix_"+p.family, "/%d is narrower than address_prefix_%s /%d: want a subnet of whole addresses (at most %d)",
				p.subnet, p.family, p.addr, p.addr)
		}
	}
}
