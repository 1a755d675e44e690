package clusterconf

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Redis says where the cluster's Redis is and how to reach it: one server
// by URL (URL, as before), or by addresses (Addrs) one server, the
// Sentinels of a master (MasterName), or the seed nodes of a Redis Cluster
// (Cluster), with the credentials, database and TLS given apart.
type Redis struct {
	// URL is one server, redis://[user:password@]host:port/db (rediss://
	// for TLS, unix:///path); "" to use Addrs.
	URL string
	// Addrs are host:port addresses: one server, or the Sentinels when
	// MasterName is set, or cluster nodes to discover the rest from when
	// Cluster is set.
	Addrs []string
	// MasterName is the name the Sentinels monitor the master under.
	MasterName string
	// Cluster says that Addrs are nodes of a Redis Cluster.
	Cluster bool
	// Username and Password authenticate to Redis (the master and its
	// replicas, or every cluster node).
	Username, Password string
	// SentinelUsername and SentinelPassword authenticate to the Sentinels.
	SentinelUsername, SentinelPassword string
	// DB is the database (0 with Cluster, which has no other).
	DB int
	// TLS makes every connection TLS (1.2 or later), the server name taken
	// from each address.
	TLS bool
}

// Problem is one thing wrong with a Redis setting: Key is the setting's
// key in the configuration's cluster section (redis, addrs,
// master_name, cluster_mode, db, username, password,
// sentinel_username, sentinel_password, tls).
type Problem struct{ Key, Msg string }

// MaxAddrs bounds Redis.Addrs.
const MaxAddrs = 64

// Enabled reports whether r names a Redis at all.
func (r *Redis) Enabled() bool { return r.URL != "" || len(r.Addrs) > 0 }

// Kind names r's topology: "server", "sentinel" or "cluster".
func (r *Redis) Kind() string {
	switch {
	case r.URL != "":
		return "server"
	case r.MasterName != "":
		return "sentinel"
	case r.Cluster:
		return "cluster"
	}
	return "server"
}

// Check returns what is wrong with r; none for an r that names no Redis
// and sets nothing else. Messages hold no credentials.
func (r *Redis) Check() []Problem {
	var out []Problem
	bad := func(key, format string, args ...any) { out = append(out, Problem{key, fmt.Sprintf(format, args...)}) }
	apart := []struct {
		key string
		set bool
	}{
		{"master_name", r.MasterName != ""}, {"cluster_mode", r.Cluster}, {"db", r.DB != 0},
		{"username", r.Username != ""}, {"password", r.Password != ""},
		{"sentinel_username", r.SentinelUsername != ""}, {"sentinel_password", r.SentinelPassword != ""},
		{"tls", r.TLS},
	}
	switch {
	case r.URL != "" && len(r.Addrs) > 0:
		bad("addrs", "set together with redis: give one server as the redis URL, or addresses as addrs, not both")
		return out
	case r.URL != "":
		if msg := CheckURL(r.URL); msg != "" {
			bad("redis", "%s", msg)
		}
		for _, a := range apart {
			if a.set {
				bad(a.key, "is for addrs; with the redis URL, the URL holds the credentials, database and TLS (rediss://), and names one server only")
			}
		}
		return out
	case len(r.Addrs) == 0:
		for _, a := range apart {
			if a.set {
				bad(a.key, "is set but addrs (and redis) are empty, so the cluster is off")
			}
		}
		return out
	}
	if len(r.Addrs) > MaxAddrs {
		bad("addrs", "%d addresses: want at most %d", len(r.Addrs), MaxAddrs)
	}
	seen := map[string]bool{}
	for i, a := range r.Addrs {
		if msg := checkAddr(a); msg != "" {
			bad("addrs", "[%d] %q: %s", i, a, msg)
		} else if seen[a] {
			bad("addrs", "[%d] %q is listed twice", i, a)
		}
		seen[a] = true
	}
	if r.MasterName != "" && r.Cluster {
		bad("master_name", "%q with cluster_mode: true: a Sentinel master is one server with replicas, a Redis Cluster is sharded; set master_name for Sentinel or cluster_mode for Redis Cluster, not both", r.MasterName)
	}
	if r.MasterName != "" && (len(r.MasterName) > 128 || strings.ContainsFunc(r.MasterName, func(c rune) bool { return c <= ' ' || c == 0x7f })) {
		bad("master_name", "%q: want 1 to 128 characters without spaces or control characters", r.MasterName)
	}
	if r.MasterName == "" && !r.Cluster && len(r.Addrs) > 1 {
		bad("addrs", "%d addresses, but neither master_name (they are Sentinels) nor cluster_mode: true (they are cluster nodes) is set; one server takes one address", len(r.Addrs))
	}
	if r.MasterName == "" {
		if r.SentinelUsername != "" {
			bad("sentinel_username", "is only for Sentinel (master_name)")
		}
		if r.SentinelPassword != "" {
			bad("sentinel_password", "is only for Sentinel (master_name)")
		}
	}
	if r.DB < 0 {
		bad("db", "%d: want 0 or more", r.DB)
	} else if r.Cluster && r.DB != 0 {
		bad("db", "%d with cluster_mode: true: Redis Cluster has database 0 only", r.DB)
	}
	return out
}

// checkAddr returns what is wrong with a host:port address, or "".
func checkAddr(a string) string {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Sprintf("want host:port: %v", err)
	}
	if host == "" {
		return "the host is empty"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("port %q: want 1 to 65535", port)
	}
	return ""
}
