package config

import (
	"strings"
	"testing"
)

// TestClusterRedisForms: the single-URL form loads as before, the address
// forms (one server, Sentinel, Redis Cluster) load, and contradictory or
// misplaced settings are refused naming the key, without the password.
func TestClusterRedisForms(t *testing.T) {
	base := "listeners: [{listen: 127.0.0.1:0}]\ndefault_group: main\ngroups: {main: {backends: [{addr: 127.0.0.1:1}]}}\n"
	good := []string{
		`{redis: "redis://default:pw@127.0.0.1:6379/0"}`,
		`{redis: "rediss://127.0.0.1:6380/2"}`,
		`{addrs: [127.0.0.1:6379], db: 3, password: pw, tls: true}`,
		`{addrs: [10.0.0.1:26379, 10.0.0.2:26379, "[::1]:26379"], master_name: mymaster, sentinel_password: spw, password: pw}`,
		`{addrs: [10.0.0.1:7000, 10.0.0.2:7000], cluster_mode: true, username: u, password: pw}`,
		`{addrs: [10.0.0.1:7000], cluster_mode: true}`,
	}
	for _, g := range good {
		cfg, _, err := Parse("proxy.yaml", []byte(base+"cluster: "+g+"\n"))
		if err != nil {
			t.Errorf("%s: %v", g, err)
			continue
		}
		if !cfg.Cluster.Enabled() {
			t.Errorf("%s: the cluster is off", g)
		}
	}
	bad := []struct{ cluster, key, says string }{
		{`{redis: "redis://127.0.0.1:6379/0", addrs: [127.0.0.1:6379]}`, "cluster.addrs", "not both"},
		{`{redis: "redis://127.0.0.1:6379/0", master_name: m}`, "cluster.master_name", "the URL holds"},
		{`{redis: "redis://127.0.0.1:6379/0", password: hunter2-s3cret}`, "cluster.password", "the URL holds"},
		{`{addrs: [a:1, b:2], master_name: m, cluster_mode: true}`, "cluster.master_name", "not both"},
		{`{addrs: [a:1, b:2]}`, "cluster.addrs", "neither master_name"},
		{`{addrs: [a:1], sentinel_password: hunter2-s3cret}`, "cluster.sentinel_password", "only for Sentinel"},
		{`{addrs: [a:1], cluster_mode: true, db: 2}`, "cluster.db", "database 0 only"},
		{`{addrs: [a:1], db: -1}`, "cluster.db", "0 or more"},
		{`{addrs: [a], master_name: m}`, "cluster.addrs", "host:port"},
		{`{addrs: [a:0], master_name: m}`, "cluster.addrs", "1 to 65535"},
		{`{addrs: [a:1, a:1], master_name: m}`, "cluster.addrs", "twice"},
		{`{addrs: [a:1], master_name: "my master"}`, "cluster.master_name", "without spaces"},
		{`{master_name: m}`, "cluster.master_name", "the cluster is off"},
	}
	for _, b := range bad {
		_, _, err := Parse("proxy.yaml", []byte(base+"cluster: "+b.cluster+"\n"))
		if err == nil {
			t.Errorf("%s: accepted", b.cluster)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, b.key) || !strings.Contains(msg, b.says) || strings.Contains(msg, testSecret) {
			t.Errorf("%s: want a problem at %s saying %q, without the password; got\n%v", b.cluster, b.key, b.says, msg)
		}
	}
}
