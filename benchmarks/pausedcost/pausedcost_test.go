package pausedcost

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestRunRefusesWhatCannotMeasure(t *testing.T) {
	good := Config{Target: TargetPush, Servers: []Server{{"a", "/bin/false"}}, Conns: 1, Repeats: 1, IdleWindow: time.Second, Window: time.Second}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"target", func(c *Config) { c.Target = "serve" }, `target "serve"`},
		{"servers", func(c *Config) { c.Servers = nil }, "0 servers"},
		{"conns", func(c *Config) { c.Conns = 0 }, "0 conns"},
		{"window", func(c *Config) { c.Window = 0 }, "positive windows"},
	} {
		cfg := good
		c.edit(&cfg)
		if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Run = %v, want an error with %q", c.name, err, c.want)
		}
	}
}
