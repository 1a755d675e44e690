package main

import (
	"strings"
	"testing"
)

// TestValidateConfigChecksCluster: --validate-config reports a bad cluster
// section, each problem with its position (a URL that does not parse, with
// its password hidden, an ID with a space, a heartbeat of 0, an unknown
// duplicate_login mode), and exits 2.
func TestValidateConfigChecksCluster(t *testing.T) {
	path := writeConfig(t, `listeners: [{listen: 127.0.0.1:25577}]
default_group: main
groups: {main: {backends: [{addr: 127.0.0.1:25565}]}}
cluster:
  redis: "http://user:secret@127.0.0.1:6379/0"
  id: "proxy a"
  heartbeat: 0
  duplicate_login: kick_new
  status_sample: 13
`)
	err := testApp(&syncBuffer{}).Run([]string{"tidegate", "proxy", "--config", path, "--validate-config"})
	if code := exitCode(err); code != exitConfig || err == nil {
		t.Fatalf("exit code %d, %v; want %d", code, err, exitConfig)
	}
	msg := err.Error()
	for _, want := range []string{
		path + `:5:10: cluster.redis: "http://user:REDACTED@127.0.0.1:6379/0": `,
		path + `:6:7: cluster.id: "proxy a": want 1 to 64 letters`,
		path + `:7:14: cluster.heartbeat: 0s must be positive`,
		path + `:8:20: cluster.duplicate_login: "kick_new": want refuse or kick_old`,
		path + `:9:18: cluster.status_sample: 13: want 0 to 12`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("the password shows:\n%s", msg)
	}
	ok := writeConfig(t, `listeners: [{listen: 127.0.0.1:25577}]
default_group: main
groups: {main: {backends: [{addr: 127.0.0.1:25565}]}}
cluster: {redis: "redis://127.0.0.1:6379/0", id: proxy-a, heartbeat: 5s, duplicate_login: kick_old}
`)
	if err := testApp(&syncBuffer{}).Run([]string{"tidegate", "proxy", "--config", ok, "--validate-config"}); err != nil {
		t.Fatalf("a valid cluster configuration: %v", err)
	}
}
