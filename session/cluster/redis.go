package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/tidegate/tidegate/session/cluster/clusterconf"
)

// Key prefixes (see doc.go). A single server and a Sentinel master keep
// the names the client had before it spoke to anything else, so that an
// old and a new process sharing one Redis in a live upgrade agree on them.
// On Redis Cluster every key carries the hash tag {tidegate}: the scripts
// touch a login's name, UUID, rate key and every proxy's session hash
// together, which Redis Cluster allows only within one hash slot. No
// earlier version ran on Redis Cluster, so no process uses other names there.
const (
	prefixServer  = "tidegate:"
	prefixCluster = "{tidegate}:"
)

// newRedis returns the go-redis client of cfg.Redis (one server, a
// Sentinel master or a Redis Cluster), the key prefix its scripts use and
// how messages name it.
func newRedis(cfg *Config) (redis.UniversalClient, string, string, error) {
	r := &cfg.Redis
	if ps := r.Check(); len(ps) > 0 || !r.Enabled() {
		if len(ps) == 0 {
			return nil, "", "", errors.New("cluster: redis: no URL and no addresses")
		}
		msgs := make([]string, len(ps))
		for i, p := range ps {
			msgs[i] = p.Key + " " + p.Msg
		}
		return nil, "", "", fmt.Errorf("cluster: redis: %s", strings.Join(msgs, "; "))
	}
	if r.URL != "" {
		// The single-server form, as before (unix sockets included, which
		// UniversalOptions cannot say).
		opt, err := redis.ParseURL(r.URL)
		if err != nil {
			return nil, "", "", fmt.Errorf("cluster: redis %s", clusterconf.CheckURL(r.URL))
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = cfg.Timeout, cfg.Timeout, cfg.Timeout, cfg.Timeout
		opt.MaxRetries = -1 // a failed call falls back at once; the breaker decides when to try again
		opt.PoolSize = cfg.Workers + 2
		opt.ContextTimeoutEnabled = true
		opt.DisableIdentity = true
		opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		return redis.NewClient(opt), prefixServer, opt.Addr, nil
	}
	u := &redis.UniversalOptions{
		// A copy: go-redis's cluster client appends the nodes it finds to
		// the slice it was given, so two clients of one configuration
		// (two proxies in a test, a reload) raced on its backing array.
		Addrs: slices.Clone(r.Addrs), MasterName: r.MasterName, IsClusterMode: r.Cluster, DB: r.DB,
		Username: r.Username, Password: r.Password, SentinelUsername: r.SentinelUsername, SentinelPassword: r.SentinelPassword,
		DialTimeout: cfg.Timeout, ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout, PoolTimeout: cfg.Timeout,
		// No retries: a failed call falls back at once. Redirections
		// (MOVED, ASK) after a cluster failover are not retries and are
		// followed (go-redis's default, 3).
		MaxRetries: -1, PoolSize: cfg.Workers + 2, ContextTimeoutEnabled: true, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	if r.TLS {
		u.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12} // the server name is each address's host
	}
	prefix, desc := prefixServer, strings.Join(r.Addrs, ",")
	switch r.Kind() {
	case "sentinel":
		desc = "sentinel " + r.MasterName + "@" + desc
	case "cluster":
		prefix, desc = prefixCluster, "cluster@"+desc
	}
	return redis.NewUniversalClient(u), prefix, desc, nil
}

// kickChannel is the prefix of each proxy's kick channel, the same on
// every topology: a channel is not a key, and on Redis Cluster a PUBLISH
// reaches the subscribers of every node.
const kickChannel = "tidegate:kick:"
