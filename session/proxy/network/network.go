// Package network is the proxy's side of session/cluster, as plain
// computations: the cluster client's settings from the configuration, the
// network-wide limits of a login, the network's players as status
// answers show them, what a login tells the network and what its verdict
// means. The sessions' use of the client stays in the proxy.
//
// Several proxies, one network (session/cluster does the Redis side). With
// cluster.redis set, each proxy publishes its logged-in sessions and a
// heartbeat in Redis, and a login waits, paused on its loop, for the
// network's verdict before its backend is dialled: a second login of a name
// or UUID held anywhere is refused (or, with duplicate_login: kick_old, the
// older session is closed, on whichever proxy it is), and with
// network_limits the login rate per address and the session cap per subnet
// hold across proxies. The Redis calls run on the cluster client's few
// goroutines; the verdict comes back to the session's loop through
// Loop.Execute. When Redis does not answer within login_wait (or the
// client's circuit breaker is open) the login goes on by this proxy's own
// state: its local limits and the duplicates among its own sessions.
package network

import (
	"encoding/json"
	"net/netip"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/cluster"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/ratelimit"
	"github.com/tidegate/tidegate/session/proxy/status"
)

// ClientConfig returns the settings of the cluster client of cc, whose
// Redis is set, logging to log and calling onKick with the handle of a
// session a newer login elsewhere displaced.
func ClientConfig(cc config.ClusterConfig, log zerolog.Logger, onKick func(handle any)) cluster.Config {
	id := cc.ID
	if id == "" {
		id = cluster.HostID()
	}
	mode := cluster.Refuse
	if cc.DuplicateLogin == config.DuplicateKickOld {
		mode = cluster.KickOld
	}
	return cluster.Config{
		Redis: cc.RedisTarget(), ID: id, Heartbeat: cc.Heartbeat, Timeout: cc.Timeout, LoginWait: cc.LoginWait, Mode: mode,
		Sample: cc.StatusSample, Workers: cc.Workers, Queue: cc.Queue, Failures: cc.Failures, Retry: cc.Retry,
		Log: log, OnKick: onKick,
	}
}

// Limits returns the network-wide limits of a login from ip under
// lim, and the subnet it is counted in ("" when the cap is off).
func Limits(lim *config.Limits, ip string) (cluster.Limits, string) {
	var out cluster.Limits
	a, ok := ratelimit.SourceAddr(ip)
	if !ok {
		return out, ""
	}
	if lim.LoginRate > 0 {
		iv := ratelimit.Interval(lim.LoginRate)
		out.RateKey = netip.AddrFrom16(ratelimit.AddressKey(a, lim)).Unmap().String()
		out.RateInterval = time.Duration(iv)
		out.RateTolerance = time.Duration(int64(lim.LoginBurst-1) * iv)
	}
	subnet := ""
	if lim.MaxSessionsPerSubnet > 0 {
		bits := lim.SubnetPrefixIPv6
		if a.Is4() {
			bits = lim.SubnetPrefixIPv4
		}
		if pfx, err := a.Prefix(bits); err == nil {
			subnet = pfx.String()
			out.SubnetCap = lim.MaxSessionsPerSubnet
		}
	}
	return out, subnet
}

// Players returns the network's players n for status answers under cc,
// which asks for them with status_online or status_sample; Online is -1
// when only the sample is asked for (the backend's count then stands).
func Players(cc config.ClusterConfig, n cluster.Network) *status.Players {
	sp := &status.Players{Online: -1}
	if cc.StatusOnline {
		sp.Online = int64(n.Online)
	}
	if cc.StatusSample > 0 {
		type entry struct {
			Name string `json:"name"`
			ID   string `json:"id"`
		}
		sample := make([]entry, 0, len(n.Sample))
		for _, s := range n.Sample[:min(len(n.Sample), cc.StatusSample)] {
			u, ok := mc.ParseUUID([]byte(s.UUID))
			if !ok {
				u = mc.OfflineUUID([]byte(s.Name))
			}
			sample = append(sample, entry{Name: s.Name, ID: string(mc.AppendUUID(nil, u, true))})
		}
		sp.Sample, _ = json.Marshal(sample) // strings always marshal
	}
	return sp
}
