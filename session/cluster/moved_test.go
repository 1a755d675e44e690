package cluster

import (
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/testredis"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// TestMovedRepublishesTheRecord: a session moved to another server has its
// record in Redis say so after the next heartbeat, as another proxy reads
// the network; its name stays taken, and moving it again and back is
// published too.
func TestMovedRepublishesTheRecord(t *testing.T) {
	rs := testredis.Start(t)
	a := testClient(t, rs.URL(), "proxy-a", Refuse, nil)
	b := testClient(t, rs.URL(), "proxy-b", Refuse, nil)
	tk, ans := login(t, a, "Mover", "")
	if ans.Verdict != Accepted {
		t.Fatalf("login: %v", ans.Verdict)
	}
	backendOnB := func() string {
		n, ok := b.Network()
		if !ok || len(n.Sample) != 1 {
			return ""
		}
		return n.Sample[0].Backend
	}
	waitfor.Value(t, "the record at main", backendOnB, func(s string) bool { return s == "main" })
	for _, to := range []string{"lobby", "game-2", "main"} {
		a.Moved(tk, to)
		if tk.Session().Backend != to {
			t.Fatalf("the ticket's session is on %q, want %q", tk.Session().Backend, to)
		}
		waitfor.Value(t, "the record at "+to, backendOnB, func(s string) bool { return s == to })
	}
	if _, ans := login(t, b, "mover", ""); ans.Verdict != Duplicate {
		t.Fatalf("the moved player's name on another proxy: %+v, want a duplicate", ans)
	}
	if n, _ := b.Network(); n.Online != 1 {
		t.Fatalf("network %+v, want the one session", n)
	}
}
