package config

import (
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/reactor/flowcontrol"
)

// TestLimitsLinger: limits.linger defaults to the reactor's 30 s (flowcontrol.DefaultLinger) (the
// embedded configuration says so too), is read from YAML, and a negative
// value is refused by name.
func TestLimitsLinger(t *testing.T) {
	def, err := parseConfig(DefaultYAML())
	if err != nil {
		t.Fatal(err)
	}
	if def.Limits.Linger != flowcontrol.DefaultLinger || flowcontrol.DefaultLinger != 30*time.Second {
		t.Fatalf("embedded linger %v, reactor default %v: want 30s both", def.Limits.Linger, flowcontrol.DefaultLinger)
	}
	base := "listeners: [{listen: \"127.0.0.1:1\", mode: raw, group: g}]\ngroups: {g: {backends: [{addr: \"127.0.0.1:2\"}]}}\n"
	c, err := parseConfig([]byte(base + "limits: {linger: 2s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.Linger != 2*time.Second {
		t.Fatalf("linger %v, want 2s", c.Limits.Linger)
	}
	if _, err := parseConfig([]byte(base + "limits: {linger: -1s}\n")); err == nil || !strings.Contains(err.Error(), "limits.linger") {
		t.Fatalf("negative linger: %v, want an error naming limits.linger", err)
	}
}
