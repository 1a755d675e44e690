package network

import (
	"testing"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/cluster"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// TestRefusal: the network's refusals map to their reasons; the other
// verdicts let the login go on.
func TestRefusal(t *testing.T) {
	for v, want := range map[cluster.Verdict]reasons.Reason{
		cluster.Duplicate: reasons.DuplicateLogin, cluster.LoginRate: reasons.LoginRate, cluster.SubnetCap: reasons.MaxSessionsPerSubnet,
	} {
		if r, refused := Refusal(v); !refused || r != want {
			t.Errorf("Refusal(%v) = %v, %v; want %v, true", v, r, refused, want)
		}
	}
	for _, v := range []cluster.Verdict{cluster.Accepted, cluster.Local} {
		if r, refused := Refusal(v); refused {
			t.Errorf("Refusal(%v) = %v, true; want the login to go on", v, r)
		}
	}
}

// TestLoginWait: a login waits login_wait and the slack, but not past its
// handshake timeout.
func TestLoginWait(t *testing.T) {
	cc := &config.ClusterConfig{LoginWait: time.Second}
	if got := LoginWait(cc, time.Minute); got != time.Second+waitSlack {
		t.Errorf("with a minute left: %v, want %v", got, time.Second+waitSlack)
	}
	if got := LoginWait(cc, 100*time.Millisecond); got != 100*time.Millisecond {
		t.Errorf("with 100ms left: %v, want 100ms", got)
	}
}

// TestLogin: the UUID of a Login Start that carries one is published, and
// the network-wide limits apply only with network_limits.
func TestLogin(t *testing.T) {
	body := append([]byte{0x00, 0x05}, "Steve"...)
	body = append(body, make([]byte, 16)...)
	body[len(body)-1] = 1
	cfg := &config.Config{Limits: config.Limits{MaxSessionsPerSubnet: 3, SubnetPrefixIPv4: 24}}
	sess, lim := Login(cfg, "Steve", "lobby", "main", body, 764, "10.1.2.3")
	if sess.Name != "Steve" || sess.Host != "lobby" || sess.Backend != "main" || sess.UUID != "00000000000000000000000000000001" || lim != (cluster.Limits{}) || sess.Subnet != "" {
		t.Errorf("without network_limits: %+v, %+v", sess, lim)
	}
	cfg.Cluster.NetworkLimits = true
	if sess, lim = Login(cfg, "Steve", "lobby", "main", body, 764, "10.1.2.3"); lim.SubnetCap != 3 || sess.Subnet != "10.1.2.0/24" {
		t.Errorf("with network_limits: %+v, %+v", sess, lim)
	}
}

// TestLoginOfflineUUID: a login the proxy completes offline is published
// with the offline UUID even when its Login Start carries none (before
// 1.19.3); a transparent one without a UUID is published without.
func TestLoginOfflineUUID(t *testing.T) {
	body := append([]byte{0x05}, "Steve"...) // 1.8's Login Start: the name alone
	cfg := &config.Config{Groups: map[string]config.GroupConfig{"off": {Login: config.LoginOffline}, "plain": {}}}
	u := mc.OfflineUUID([]byte("Steve"))
	if sess, _ := Login(cfg, "Steve", "lobby", "off", body, 47, "10.1.2.3"); sess.UUID != string(mc.AppendUUID(nil, u, false)) {
		t.Errorf("offline group: UUID %q, want the offline one %x", sess.UUID, u)
	}
	if sess, _ := Login(cfg, "Steve", "lobby", "plain", body, 47, "10.1.2.3"); sess.UUID != "" {
		t.Errorf("transparent group: UUID %q, want none", sess.UUID)
	}
}
