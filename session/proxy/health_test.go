package proxy

import (
	"strings"
	"testing"
	"time"
)

func TestHealthConfigValidation(t *testing.T) {
	_, err := ParseConfig([]byte(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: g
groups:
  g: {backends: [{addr: "127.0.0.1:1"}, {addr: "127.0.0.1:1"}], offline_message: "   "}
health: {interval: -1s, timeout: -2s, check: ping, offline_message: "` + strings.Repeat("x", 1025) + `"}
`))
	if err == nil {
		t.Fatal("invalid health config accepted")
	}
	for _, want := range []string{
		`groups.g.backends[1].addr: "127.0.0.1:1" is already backends[0]`, `groups.g.offline_message: "   " is blank`,
		"health.interval: -1s must be positive", "health.timeout: -2s must be positive",
		`health.check: "ping": want auto, tcp or status`, "health.offline_message: 1025 bytes: want at most 1024",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %s:\n%v", want, err)
		}
	}
	cfg, err := ParseConfig([]byte(`
listeners: [{listen: "127.0.0.1:0"}]
default_group: g
groups: {g: {backends: [{addr: "127.0.0.1:1"}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if h := cfg.Health; h.Interval != 0 || h.Timeout != 2*time.Second || h.Check != CheckAuto || h.OfflineMessage != DefaultOfflineMessage {
		t.Fatalf("health defaults %+v", h)
	}
}
