package proxy

import (
	"net"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/logbuf"
	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// TestOnlineLoginClientGivesUp: a client that closes its connection, or
// only its write side, after the Encryption Request, without answering,
// is counted as encryption_abandoned and logged with its fields (remote,
// user, group, state, how long after the request); no backend is dialled.
func TestOnlineLoginClientGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave func(c net.Conn)
	}{
		{"closes", func(c net.Conn) { _ = c.Close() }},
		{"half-closes", func(c net.Conn) { _ = c.(*net.TCPConn).CloseWrite() }},
		{"resets", func(c net.Conn) { _ = c.(*net.TCPConn).SetLinger(0); _ = c.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			ss := sessionserver.Start(t)
			srv, be := startBackendServer(t, mcbackend.Config{Forwarding: mcbackend.ForwardBungeeCord})
			var log logbuf.Buffer
			p, addr := startProxy(t, onlineConfig(t, be, "bungeecord", ss.URL, 10*time.Second, 10*time.Second),
				func(p *Proxy) { p.log = testLoggerTo(&log) })
			c, _ := rawOnlineLogin(t, addr)
			tc.leave(c)
			waitStats(t, p, "the refusal", func(st proxymetrics.Stats) bool {
				return st.Rejected["encryption_abandoned"] == 1 && st.Active == 0
			})
			var line map[string]any
			waitfor.Value(t, "the log line", func() map[string]any {
				for _, l := range log.JSONLines() {
					if l["reason"] == "encryption_abandoned" {
						line = l
					}
				}
				return line
			}, func(l map[string]any) bool { return l != nil })
			for k, want := range map[string]any{"user": alice.Name, "group": "main", "state": "encryption", "level": "warn"} {
				if line[k] != want {
					t.Errorf("log field %s = %v, want %v: %v", k, line[k], want, line)
				}
			}
			for _, k := range []string{"remote", "after"} {
				if _, ok := line[k]; !ok {
					t.Errorf("log line without %s: %v", k, line)
				}
			}
			if st := p.Stats(); st.Routed != 0 || len(st.Rejected) != 1 || srv.Stats().LoginStarts != 0 {
				t.Fatalf("proxy %d routed, refusals %v, backend %d logins; want the one refusal alone", st.Routed, st.Rejected, srv.Stats().LoginStarts)
			}
			if n := len(ss.Queries()); n != 0 {
				t.Fatalf("%d hasJoined calls, want none", n)
			}
		})
	}
}
