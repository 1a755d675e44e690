package config

import (
	"time"

	"github.com/tidegate/tidegate/session/cluster/clusterconf"
)

// DuplicateLogin is what a login of a name or UUID held by a live session
// gets.
type DuplicateLogin string

// Duplicate login modes.
const (
	DuplicateRefuse  DuplicateLogin = "refuse"   // the new login is refused
	DuplicateKickOld DuplicateLogin = "kick_old" // the older session is closed
)

// ClusterConfig joins the proxy to a network of proxies that share player
// state through Redis; off while Redis and RedisAddrs are empty.
type ClusterConfig struct {
	// Redis is one server's URL, redis://[user:password@]host:port/db;
	// wherever it is shown, its credentials are redacted (SecretURL).
	Redis SecretURL `yaml:"redis"`
	// RedisAddrs, instead of Redis, are host:port addresses: one server,
	// the Sentinels of MasterName, or (RedisCluster) Redis Cluster nodes.
	RedisAddrs []string `yaml:"addrs"`
	// MasterName is the master's name at the Sentinels of RedisAddrs.
	MasterName string `yaml:"master_name"`
	// RedisCluster says that RedisAddrs are Redis Cluster nodes.
	RedisCluster bool `yaml:"cluster_mode"`
	// RedisUsername and RedisPassword authenticate to Redis, with
	// RedisAddrs (a Redis URL holds its own).
	RedisUsername string `yaml:"username"`
	RedisPassword Secret `yaml:"password"`
	// SentinelUsername and SentinelPassword authenticate to the Sentinels.
	SentinelUsername string `yaml:"sentinel_username"`
	SentinelPassword Secret `yaml:"sentinel_password"`
	// RedisDB is the database, with RedisAddrs (0 on Redis Cluster).
	RedisDB int `yaml:"db"`
	// RedisTLS makes the connections of RedisAddrs TLS.
	RedisTLS bool `yaml:"tls"`
	// ID names this proxy in the network (letters, digits, . _ -); ""
	// means the host name. Proxies need distinct IDs; a live upgrade keeps
	// the ID and the sessions published under it.
	ID string `yaml:"id"`
	// Heartbeat is how often the proxy refreshes its keys; they expire
	// cluster.TTLFactor (3) heartbeats after the last, so a proxy that dies
	// leaves the network within 3 heartbeats.
	Heartbeat time.Duration `yaml:"heartbeat"`
	// Timeout bounds one Redis call.
	Timeout time.Duration `yaml:"timeout"`
	// LoginWait bounds how long a login waits for the network's verdict;
	// then this proxy's own state decides.
	LoginWait time.Duration `yaml:"login_wait"`
	// DuplicateLogin is refuse or kick_old.
	DuplicateLogin DuplicateLogin `yaml:"duplicate_login"`
	// StatusOnline makes status answers report the network's player count
	// (players.online) while Redis answers.
	StatusOnline bool `yaml:"status_online"`
	// StatusSample is how many names of the network (picked at random) a
	// status answer lists in players.sample; 0 keeps the backend's.
	StatusSample int `yaml:"status_sample"`
	// NetworkLimits applies limits.login_rate and max_sessions_per_subnet
	// across the network too (the subnet's logged-in sessions, checked at
	// Login Start); the local limits apply as well, and alone while Redis
	// is away.
	NetworkLimits bool `yaml:"network_limits"`
	// Workers is how many goroutines make the Redis calls, Queue how many
	// calls may wait for them.
	Workers int `yaml:"workers"`
	Queue   int `yaml:"queue"`
	// Failures is how many failed calls in a row make the proxy stop asking
	// Redis (counted as fallbacks); it probes it every Retry.
	Failures int           `yaml:"failures"`
	Retry    time.Duration `yaml:"retry"`
}

// Enabled reports whether the cluster is on: a Redis is named.
func (cc *ClusterConfig) Enabled() bool { return cc.Redis != "" || len(cc.RedisAddrs) > 0 }

// RedisTarget returns where cc's Redis is, credentials revealed, for the
// cluster client.
func (cc *ClusterConfig) RedisTarget() clusterconf.Redis {
	return clusterconf.Redis{
		URL: cc.Redis.Reveal(), Addrs: cc.RedisAddrs, MasterName: cc.MasterName, Cluster: cc.RedisCluster,
		Username: cc.RedisUsername, Password: cc.RedisPassword.Reveal(),
		SentinelUsername: cc.SentinelUsername, SentinelPassword: cc.SentinelPassword.Reveal(),
		DB: cc.RedisDB, TLS: cc.RedisTLS,
	}
}

// defaultClusterConfig is cluster: as a file that leaves it out gets it.
func defaultClusterConfig() ClusterConfig {
	return ClusterConfig{
		Heartbeat: 5 * time.Second, Timeout: 200 * time.Millisecond, LoginWait: 250 * time.Millisecond,
		DuplicateLogin: DuplicateRefuse, Workers: 4, Queue: 1024, Failures: 3, Retry: time.Second,
	}
}

// checkCluster reports the problems of cluster:.
func (c *Config) checkCluster(bad func(path, format string, args ...any)) {
	cc := c.Cluster
	target := cc.RedisTarget()
	for _, p := range target.Check() {
		bad("cluster."+p.Key, "%s", p.Msg)
	}
	if cc.ID != "" {
		if msg := clusterconf.CheckID(cc.ID); msg != "" {
			bad("cluster.id", "%s", msg)
		}
	}
	for _, d := range []struct {
		path string
		v    time.Duration
	}{
		{"cluster.heartbeat", cc.Heartbeat}, {"cluster.timeout", cc.Timeout},
		{"cluster.login_wait", cc.LoginWait}, {"cluster.retry", cc.Retry},
	} {
		if d.v <= 0 {
			bad(d.path, "%v must be positive", d.v)
		}
	}
	switch cc.DuplicateLogin {
	case DuplicateRefuse, DuplicateKickOld:
	default:
		bad("cluster.duplicate_login", "%q: want refuse or kick_old", cc.DuplicateLogin)
	}
	if cc.StatusSample < 0 || cc.StatusSample > 12 {
		bad("cluster.status_sample", "%d: want 0 to 12", cc.StatusSample)
	}
	if cc.Workers < 1 || cc.Workers > 64 {
		bad("cluster.workers", "%d: want 1 to 64", cc.Workers)
	}
	if cc.Queue < 16 || cc.Queue > 1<<20 {
		bad("cluster.queue", "%d: want 16 to 1048576", cc.Queue)
	}
	if cc.Failures < 1 || cc.Failures > 1000 {
		bad("cluster.failures", "%d: want 1 to 1000", cc.Failures)
	}
}

// clusterWarnings reports cluster settings that are valid but likely not
// meant.
func (c *Config) clusterWarnings(warn func(path, format string, args ...any)) {
	cc := c.Cluster
	if !cc.Enabled() {
		return
	}
	if cc.LoginWait >= c.Limits.HandshakeTimeout {
		warn("cluster.login_wait", "%v is not below limits.handshake_timeout %v: a login waiting for Redis times out first", cc.LoginWait, c.Limits.HandshakeTimeout)
	}
	if cc.Timeout > cc.Heartbeat {
		warn("cluster.timeout", "%v is above the heartbeat %v: a slow heartbeat delays the next", cc.Timeout, cc.Heartbeat)
	}
}
