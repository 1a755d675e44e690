package cluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/logbuf"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// TestRedisSecretStaysOutOfErrorsAndLogs: the password of the Redis
// URL is not in New's error for a bad URL, nor in what the client logs and
// answers when Redis cannot be reached.
func TestRedisSecretStaysOutOfErrorsAndLogs(t *testing.T) {
	const secret = "hunter2-s3cret"
	cfg := Config{ID: "p1", Heartbeat: 50 * time.Millisecond, Timeout: 200 * time.Millisecond, LoginWait: 200 * time.Millisecond,
		Mode: Refuse, Workers: 1, Queue: 16, Failures: 1, Retry: 50 * time.Millisecond, OnKick: func(any) {}}
	for _, bad := range []string{"redis://default:" + secret + "@127.0.0.1:bad/0", "redis://default:" + secret + "@127.0.0.1:1/x"} {
		cfg.Redis.URL = bad
		if _, err := New(cfg); err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("New(%q): %v, want an error without the password", bad, err)
		}
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String() // nothing listens there once l is closed
	l.Close()
	var logs logbuf.Buffer
	cfg.Redis.URL = "redis://default:" + secret + "@" + closed + "/0"
	cfg.Log = zerolog.New(&logs)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(true)
	_, a, _ := c.Login(Session{Name: "alice", UUID: "u1", Host: "play.example", Backend: "main", Since: time.Now()}, Limits{}, "alice", func(Answer) {})
	waitfor.Check(t, "the log of Redis unreachable", func() error {
		if !strings.Contains(logs.String(), "Redis unreachable") {
			return fmt.Errorf("the log so far:\n%s", logs.String())
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("Stop: %v holds the password", err)
	}
	if text := logs.String() + a.Verdict.String(); strings.Contains(text, secret) || !strings.Contains(text, closed) {
		t.Errorf("the log holds the password or lacks the address %s:\n%s", closed, text)
	}
}
