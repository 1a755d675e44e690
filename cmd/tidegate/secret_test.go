package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// TestProxyRedactsTheRedisPassword: a Redis password given through
// ${VAR} in cluster.redis is in nothing the proxy writes: not in
// /api/v1/config (which shows the URL with REDACTED and lists
// cluster.redis as redacted), the log (start, Redis unreachable, a
// refused reload), the reload's answer or --validate-config's problems.
func TestProxyRedactsTheRedisPassword(t *testing.T) {
	const secret = "hunter2-s3cret"
	t.Setenv("TIDEGATE_TEST_REDIS_PW", secret)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String() // nothing listens there once l is closed
	l.Close()
	const token = "secret-test-token-0123456789"
	base := readFile(t, proxyConfig(t, acceptor(t))) + adminSection(writeToken(t, token))
	cluster := func(redis string) string {
		return base + "cluster: {redis: \"redis://default:${TIDEGATE_TEST_REDIS_PW}@" + redis + "\", failures: 1, retry: 50ms}\n"
	}
	path := writeConfig(t, cluster(closed+"/0"))
	addr, logs := runCommandLogs(t, "127.0.0.1:0", "proxy", "--config", path)
	written := map[string]string{}

	code, body := get(t, addr, "/api/v1/config")
	written["/api/v1/config"] = string(body)
	if want := `"redis":"redis://default:REDACTED@` + closed + `/0"`; code != http.StatusOK || !strings.Contains(string(body), want) ||
		!strings.Contains(string(body), `"redacted":["cluster.redis"]`) {
		t.Errorf("/api/v1/config: %d, want 200 with %s and cluster.redis redacted:\n%s", code, want, body)
	}
	waitfor.Check(t, "the log of Redis unreachable", func() error {
		if !strings.Contains(logs.String(), "Redis unreachable") {
			return fmt.Errorf("the log so far:\n%s", logs)
		}
		return nil
	})

	if err := os.WriteFile(path, []byte(cluster("127.0.0.1:bad/0")), 0o644); err != nil {
		t.Fatal(err)
	}
	status, answer := postReload(t, addr, token)
	written["/-/reload"] = answer
	if status == http.StatusOK || !strings.Contains(answer, "cluster.redis") {
		t.Errorf("reload of a bad cluster.redis: %d %s, want it refused naming cluster.redis", status, answer)
	}
	err = testApp(&syncBuffer{}).Run([]string{"tidegate", "proxy", "--config", path, "--validate-config"})
	if exitCode(err) != exitConfig {
		t.Errorf("--validate-config of a bad cluster.redis: %v, want exit %d", err, exitConfig)
	}
	written["--validate-config"] = err.Error()
	written["log"] = logs.String()
	for what, text := range written {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the password:\n%s", what, text)
		}
	}
}
