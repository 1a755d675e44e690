package network

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/cluster"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/reasons"
	"github.com/tidegate/tidegate/session/proxy/status"
)

// NewClient builds the cluster client of cc, logging to log and calling
// onKick with the handle of a session a newer login elsewhere displaced;
// nil when the cluster is off (no cluster.redis nor cluster.redis_addrs).
func NewClient(cc config.ClusterConfig, log zerolog.Logger, onKick func(handle any)) (*cluster.Client, error) {
	if !cc.Enabled() {
		return nil, nil
	}
	c, err := cluster.New(ClientConfig(cc, log, onKick))
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	return c, nil
}

// waitSlack is how much longer than cluster.login_wait a login waits for
// the cluster client's answer (which comes within login_wait) before going
// on without it.
const waitSlack = 250 * time.Millisecond

// LoginWait is how long a login waits for the cluster client's answer
// under cc: login_wait and a slack, but no longer than left, what remains
// of its handshake timeout.
func LoginWait(cc *config.ClusterConfig, left time.Duration) time.Duration {
	return min(cc.LoginWait+waitSlack, left)
}

// Login returns what the network is told of a login under cfg of name
// (its Login Start body in protocol version protocol, which may carry a
// UUID), for host, to group, from ip: the session to publish, and the
// network-wide limits it is checked against (with network_limits).
func Login(cfg *config.Config, name, host, group string, body []byte, protocol int32, ip string) (cluster.Session, cluster.Limits) {
	sess := cluster.Session{Name: name, Host: host, Backend: group, Since: time.Now()}
	if u, ok := mc.LoginStartUUID(body, protocol); ok {
		sess.UUID = string(mc.AppendUUID(nil, u, false))
	} else if g, ok := cfg.Groups[group]; ok && g.LoginMode() == config.LoginOffline {
		// The proxy completes this login with the offline UUID, whatever
		// the client's version: the network knows the player by it.
		u := mc.OfflineUUID([]byte(name))
		sess.UUID = string(mc.AppendUUID(nil, u, false))
	}
	var lim cluster.Limits
	if cfg.Cluster.NetworkLimits {
		lim, sess.Subnet = Limits(&cfg.Limits, ip)
	}
	return sess, lim
}

// Refusal returns the reason verdict v refuses a login for, and false when
// v lets it go on.
func Refusal(v cluster.Verdict) (reasons.Reason, bool) {
	switch v {
	case cluster.Duplicate:
		return reasons.DuplicateLogin, true
	case cluster.LoginRate:
		return reasons.LoginRate, true
	case cluster.SubnetCap:
		return reasons.MaxSessionsPerSubnet, true
	}
	return 0, false
}

// KickedDisconnect returns the Login Disconnect frame a player still
// logging in reads when a newer login of its name or UUID displaced it.
func KickedDisconnect() []byte {
	return mc.AppendLoginDisconnect(nil, []byte(`{"text":"`+reasons.DisconnectText(reasons.LoggedInElsewhere)+`"}`))
}

// StatusPlayers returns the network's players for status answers under
// cc, when cluster.status_online or status_sample ask for them and c
// (nil without a cluster) has them from Redis; nil otherwise (the
// backend's players then stand).
func StatusPlayers(c *cluster.Client, cc config.ClusterConfig) *status.Players {
	if c == nil || (!cc.StatusOnline && cc.StatusSample == 0) {
		return nil
	}
	n, ok := c.Network()
	if !ok {
		return nil
	}
	return Players(cc, n)
}
