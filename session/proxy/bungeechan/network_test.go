package bungeechan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/bungeemsg"
	"github.com/tidegate/tidegate/session/cluster"
)

// fakeNetwork is Redis's view of the network as the roster reads it: the
// reads wait until release is closed.
type fakeNetwork struct {
	release  chan struct{}
	sessions []cluster.Listed
	err      error
	reads    atomic.Int64
}

func (n *fakeNetwork) ID() string { return "proxy-0" }

func (n *fakeNetwork) NetworkSessions(ctx context.Context, match func(cluster.Listed) bool, limit int) (cluster.NetworkList, error) {
	n.reads.Add(1)
	select {
	case <-n.release:
	case <-ctx.Done():
		return cluster.NetworkList{}, ctx.Err()
	}
	var out cluster.NetworkList
	for _, l := range n.sessions {
		if match(l) && len(out.Sessions) < limit {
			out.Sessions = append(out.Sessions, l)
		}
	}
	return out, n.err
}

// remote is a player on another proxy; the records of proxy-0 (this one)
// are left out, and one of Steve, who is here too, is listed once.
var remoteSessions = []cluster.Listed{
	{Proxy: "proxy-1", Session: cluster.Session{Name: "Remote", UUID: "0a0b0c0d000000000000000000000001", Backend: "game"}},
	{Proxy: "proxy-1", Session: cluster.Session{Name: "steve", Backend: "lobby"}},
	{Proxy: "proxy-0", Session: cluster.Session{Name: "Stale", Backend: "game"}},
}

// networkWorld is a world whose directory reads the network of n.
func networkWorld(t *testing.T, n *fakeNetwork) *world {
	w := newWorld(t)
	cfg := w.d.cfg
	w.d = newDirectory(zerolog.New(w.log), cfg, n, func() (int, bool) { return 7, true })
	return w
}

// answers returns the subchannels and texts of the answers s's backend got.
func (w *world) answers(u *User, s *fakeSession) []string {
	w.t.Helper()
	var out []string
	for _, f := range s.toBackend {
		_, m := w.answer(u, f, -1)
		out = append(out, fmt.Sprintf("%s %q %q %s %d", m.Sub, m.Server, m.Text, m.UUID, m.Count))
	}
	return out
}

// TestRosterReadsOnceForManyWaiters: messages that need the other proxies'
// players wait for one read of the network, shared by every session that
// asks while it is under way and reused for RosterTTL; those behind them
// wait too, so the answers keep the messages' order; the answers merge
// this proxy's players with the others'.
func TestRosterReadsOnceForManyWaiters(t *testing.T) {
	n := &fakeNetwork{release: make(chan struct{}), sessions: remoteSessions}
	w := networkWorld(t, n)
	u, s := w.join(alex, 764, 0, -1)
	w.join(steve, 764, 1, -1)
	var others []*fakeSession
	var otherUsers []*User
	for i := range 50 {
		ou, os := w.join(Player{Name: fmt.Sprintf("P%02d", i), Server: "empty"}, 764, 1, -1)
		otherUsers, others = append(otherUsers, ou), append(others, os)
	}
	for _, m := range []bungeemsg.Msg{
		{Sub: bungeemsg.PlayerList, Server: "game"},
		{Sub: bungeemsg.GetServers}, // needs nothing of the network, but comes after one that does
		{Sub: bungeemsg.GetPlayerServer, Player: "remote"},
		{Sub: bungeemsg.UUIDOther, Player: "Remote"},
		{Sub: bungeemsg.PlayerCount, Server: "lobby"},
		{Sub: bungeemsg.PlayerCount, Server: "ALL"},
	} {
		if !u.Claim(plugin(t, u, bungeemsg.ModernChannel, m)) {
			t.Fatalf("%v not claimed", m.Sub)
		}
	}
	for _, ou := range otherUsers {
		ou.Claim(plugin(t, ou, bungeemsg.ModernChannel, bungeemsg.Msg{Sub: bungeemsg.PlayerCount, Server: "game"}))
	}
	w.loops[0].run()
	w.loops[1].run()
	if len(s.toBackend) != 0 {
		t.Fatalf("answered before the network was read: %q", w.answers(u, s))
	}
	close(n.release)
	waitfor.For(t, "the answers on the loops", func() bool { return w.loops[0].queued() == 1 && w.loops[1].queued() == 50 })
	w.loops[0].run()
	w.loops[1].run()
	want := []string{
		`PlayerList "game" "Remote, Steve"  0`,
		`GetServers "" "empty, game, lobby"  0`,
		`GetPlayerServer "game" ""  0`,
		`UUIDOther "" "" 0a0b0c0d000000000000000000000001 0`,
		`PlayerCount "lobby" ""  1`, // Alex here; steve's record there is Steve here
		`PlayerCount "ALL" ""  7`,   // the heartbeats' count
	}
	if got := w.answers(u, s); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("answers:\n got %q\nwant %q", got, want)
	}
	for i, os := range others {
		if len(os.toBackend) != 1 {
			t.Fatalf("player %d: %d answers", i, len(os.toBackend))
		}
		if _, m := w.answer(otherUsers[i], os.toBackend[0], -1); m.Count != 2 { // Steve here, Remote there
			t.Fatalf("player %d: PlayerCount game %d, want 2", i, m.Count)
		}
	}
	if r := n.reads.Load(); r != 1 {
		t.Fatalf("%d reads of the network, want 1", r)
	}
	// Within RosterTTL the read is reused: answered at once.
	s.toBackend = nil
	u.Claim(plugin(t, u, bungeemsg.ModernChannel, bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "ALL"}))
	w.loops[0].run()
	if got := w.answers(u, s); len(got) != 1 || !strings.HasPrefix(got[0], `PlayerList "ALL" "Alex, P00,`) || !strings.Contains(got[0], "Remote, Steve") || strings.Contains(got[0], "Stale") {
		t.Errorf("PlayerList ALL from the reused read: %q", got)
	}
	if r := n.reads.Load(); r != 1 || w.d.RosterReads() != 1 {
		t.Fatalf("%d reads of the network (directory %d), want 1", r, w.d.RosterReads())
	}
}

// TestRosterFailureAndOverflow: when the network cannot be read, or too
// many messages wait for it, the messages are answered with this proxy's
// players, and a log line says so; a message whose session moved or ended
// while it waited is not answered to the next backend.
func TestRosterFailureAndOverflow(t *testing.T) {
	t.Run("read fails", func(t *testing.T) {
		n := &fakeNetwork{release: make(chan struct{}), sessions: remoteSessions, err: errors.New("redis: connection refused")}
		close(n.release)
		w := networkWorld(t, n)
		u, s := w.join(alex, 764, 0, -1)
		u.Claim(plugin(t, u, bungeemsg.ModernChannel, bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "ALL"}))
		waitfor.For(t, "the answer on the loop", func() bool { return w.loops[0].queued() == 1 })
		w.loops[0].run()
		if got := w.answers(u, s); len(got) != 1 || got[0] != `PlayerList "ALL" "Alex"  0` {
			t.Errorf("answers %q, want this proxy's players", got)
		}
		if !strings.Contains(w.log.String(), "the network's players could not be read") || !strings.Contains(w.log.String(), "connection refused") {
			t.Errorf("log: %s", w.log)
		}
	})
	t.Run("too many wait", func(t *testing.T) {
		n := &fakeNetwork{release: make(chan struct{}), sessions: remoteSessions}
		w := networkWorld(t, n)
		w.d.roster.max = 1
		u1, s1 := w.join(alex, 764, 0, -1)
		u2, s2 := w.join(steve, 764, 0, -1)
		u1.Claim(plugin(t, u1, bungeemsg.ModernChannel, bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "ALL"}))
		u2.Claim(plugin(t, u2, bungeemsg.ModernChannel, bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "ALL"}))
		waitfor.For(t, "the refused one's answer", func() bool { return w.loops[0].queued() == 1 })
		w.loops[0].run()
		if got := w.answers(u2, s2); len(got) != 1 || got[0] != `PlayerList "ALL" "Alex, Steve"  0` {
			t.Errorf("the second: %q, want this proxy's players", got)
		}
		if len(s1.toBackend) != 0 {
			t.Errorf("the first was answered before the read")
		}
		close(n.release)
		waitfor.For(t, "the first's answer", func() bool { return w.loops[0].queued() == 1 })
		w.loops[0].run()
		if got := w.answers(u1, s1); len(got) != 1 || got[0] != `PlayerList "ALL" "Alex, Remote, Steve"  0` {
			t.Errorf("the first: %q", got)
		}
	})
	t.Run("moved or left while waiting", func(t *testing.T) {
		n := &fakeNetwork{release: make(chan struct{}), sessions: remoteSessions}
		w := networkWorld(t, n)
		u1, s1 := w.join(alex, 764, 0, -1)
		u2, s2 := w.join(steve, 764, 0, -1)
		for _, u := range []*User{u1, u2} {
			u.Claim(plugin(t, u, bungeemsg.ModernChannel, bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "ALL"}))
		}
		u1.Moved("game", true)
		u2.Leave()
		close(n.release)
		waitfor.For(t, "the read's callbacks", func() bool { return w.loops[0].queued() == 2 })
		w.loops[0].run()
		if len(s1.toBackend)+len(s2.toBackend) != 0 {
			t.Fatalf("answered after a move (%d) or the end (%d)", len(s1.toBackend), len(s2.toBackend))
		}
		if w.counts[Failed].Load() != 1 {
			t.Errorf("failed %d, want 1 (the moved player's)", w.counts[Failed].Load())
		}
	})
}

// TestNoRosterWithoutACluster: without a cluster nothing waits.
func TestNoRosterWithoutACluster(t *testing.T) {
	w := newWorld(t)
	u, s := w.join(alex, 764, 0, -1)
	u.Claim(plugin(t, u, bungeemsg.ModernChannel, bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "ALL"}))
	w.loops[0].run()
	if got := w.answers(u, s); len(got) != 1 || got[0] != `PlayerList "ALL" "Alex"  0` || w.d.RosterReads() != 0 {
		t.Errorf("answers %q, reads %d", got, w.d.RosterReads())
	}
}
