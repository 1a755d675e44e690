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
	if l.SubnetPrefixIPv4 < 1 || l.SubnetPrefixIPv4 > 32 {
		bad("limits.subnet_prefix_ipv4", "%d: want a prefix length of 1 to 32", l.SubnetPrefixIPv4)
	}
	if l.SubnetPrefixIPv6 < 1 || l.SubnetPrefixIPv6 > 128 {
		bad("limits.subnet_prefix_ipv6", "%d: want a prefix length of 1 to 128", l.SubnetPrefixIPv6)
	}
	if _, err := mc.NewUsernamePolicy(l.UsernamePattern); err != nil {
		bad("limits.username_pattern", "%v", err)
	}
	if l.RateLimitAddresses < minLimitAddresses || l.RateLimitAddresses > maxLimitAddresses {
		bad("limits.rate_limit_addresses", "%d: want %d to %d", l.RateLimitAddresses, minLimitAddresses, maxLimitAddresses)
	}
}
