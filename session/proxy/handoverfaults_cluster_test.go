package proxy

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/seam"
	"github.com/tidegate/tidegate/internal/testkit/testredis"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// TestHandOverFaultsKeepClusterTickets: with cluster on, the faults of a
// hand-over leave the network's state as the sessions are: a player whose
// session is kept stays published once, one whose session is gone leaves
// the network (and may log in again), and once every player has left the
// network is empty, with no ticket left behind by either process.
func TestHandOverFaultsKeepClusterTickets(t *testing.T) {
	const stall = 300 * time.Millisecond
	for _, tc := range []struct {
		step, fault string
		side        newSide
		gone        bool
		// setup arms the fault; victim is the first player's connection.
		setup func(t *testing.T, victim net.Conn)
		want  int // players published after the hand-over
	}{
		{step: "all", fault: "none", want: 2},
		{step: "detached", fault: "client reset", want: 1, setup: func(t *testing.T, victim net.Conn) {
			mine := victim.LocalAddr().String()
			seam.Set(t, &testHookHandOverSend, func(client *os.File) {
				if peerOf(t, client) == mine {
					resetConn(victim)
				}
			})
		}},
		{step: "on its way", fault: "client reset", want: 1, setup: func(t *testing.T, victim net.Conn) {
			mine := victim.LocalAddr().String()
			seam.Set(t, &testHookTakeOverAdopt, func(_ int64, files []*os.File) {
				if len(files) > 0 && peerOf(t, files[0]) == mine {
					resetConn(victim)
				}
			})
		}},
		{step: "on its way", fault: "new process killed", side: dies(1), gone: true, want: 2},
		{step: "adopted", fault: "descriptor limit in the new process", want: 2,
			setup: func(t *testing.T, _ net.Conn) { descriptorLimitAtAdoption(t) }},
		{step: "adopted", fault: "the new process's drain deadline before it relays", want: 1,
			setup: func(t *testing.T, victim net.Conn) { drainDeadlineBeforeRelaying(t, victim.LocalAddr().String()) }},
	} {
		t.Run(tc.step+"/"+tc.fault, func(t *testing.T) {
			rs := testredis.Start(t)
			be := startBackend(t, mcbackend.Config{})
			oldP, addr := startProxy(t, clusterYAML(be, rs.URL(), "proxy-a", ""))
			newP, newAddr := startProxy(t, clusterYAML(be, rs.URL(), "proxy-a", ""), func(p *Proxy) { p.clusterReset = false })
			var players []net.Conn
			for _, name := range []string{"Alex", "Steve"} {
				c, ok, text := rawLogin(t, addr, name)
				if !ok {
					t.Fatalf("%s: %s", name, text)
				}
				players = append(players, c)
			}
			waitForNetwork(t, 2, oldP, newP)
			if tc.setup != nil {
				tc.setup(t, players[0])
			}
			h := runHandOver(t, oldP, newP, tc.side, stall)
			if tc.gone {
				<-h.sideDone
				oldP.HandOverLost()
			}
			waitForNetwork(t, tc.want, oldP, newP)
			if tc.want < 2 {
				// The player whose session is gone is not refused as a
				// duplicate by either proxy: the old one no longer holds its
				// ticket once the new one took the session over
				// (cluster.Client.HandedOff), and the new one released it.
				for _, at := range []string{addr, newAddr} {
					c, ok, text := rawLogin(t, at, "alex")
					if !ok {
						t.Fatalf("the player whose session was lost cannot log in again through %s: %s", at, text)
					}
					// In the network and out again before the next login.
					waitForNetwork(t, tc.want+1, oldP, newP)
					c.Close()
					waitForNetwork(t, tc.want, oldP, newP)
				}
			}
			for _, c := range players {
				c.Close()
			}
			waitForNetwork(t, 0, oldP, newP)
			h.send.Close()
			<-h.sideDone
		})
	}
}
