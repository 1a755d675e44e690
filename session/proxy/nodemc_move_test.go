package proxy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/nodemc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/admin"
)

// TestNodeMCClientsMovedBetweenBackends: node-minecraft-protocol clients
// on 1.20.4 and 1.21.11, logged in through the proxy's offline login with
// velocity forwarding and compression, are moved between two fake
// backends three times each without a disconnect; each batch of play
// payloads is echoed whole by the backend the client is on, and the
// backends count every batch.
func TestNodeMCClientsMovedBetweenBackends(t *testing.T) {
	checkNoLeaks(t)
	nodemc.Require(t) // before the mover goroutine, which a skip would leave behind
	sa, sb, a, b := startMoveBackends(t, mcbackend.ForwardVelocity, true)
	p, addr := startProxy(t, moveConfig(t, a, b, "velocity", ""))
	const moves, packets = 3, 6
	clients := []nodemc.Client{
		{Name: "n1204", Version: "1.20.4", Addr: addr, Username: "Node1204", RawEcho: true, Moves: moves, Packets: packets},
		{Name: "n12111", Version: "1.21.11", Addr: addr, Username: "Node12111", RawEcho: true, Moves: moves, Packets: packets},
	}
	// Each client's batch (and its "ready") is echoed before it is moved:
	// the mover waits for them on the backends, off the test's goroutine
	// (RunClients blocks it), and says what went wrong on moveErr.
	moveErr := make(chan error, 1)
	go func() {
		moveErr <- func() error {
			for i := range moves {
				want := int64(len(clients) * (i + 1) * (packets + 1))
				deadline := time.Now().Add(60 * time.Second)
				for sa.Stats().EchoFrames+sb.Stats().EchoFrames < want {
					if time.Now().After(deadline) {
						return fmt.Errorf("move %d: %d echoes, want %d", i, sa.Stats().EchoFrames+sb.Stats().EchoFrames, want)
					}
					time.Sleep(10 * time.Millisecond) // the backends' counters have no seam to wait on
				}
				to := map[bool]string{true: "b", false: "a"}[i%2 == 0]
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res := p.Send(ctx, admin.SendSelector{Group: map[string]string{"a": "b", "b": "a"}[to]}, admin.SendTarget{Group: to})
				cancel()
				if res.Moved != len(clients) {
					return fmt.Errorf("move %d to %s: %+v", i, to, res)
				}
			}
			return nil
		}()
	}()
	for _, r := range nodemc.RunClients(t, clients...) {
		if err := r.Err(); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
	}
	if err := <-moveErr; err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); len(st.Ended) != 0 {
		t.Fatalf("sessions ended by the proxy: %v", st.Ended)
	}
	// The last move was to b: a saw the first and third batches, b the others.
	if sa.Stats().PlayStarted != 2*2 || sb.Stats().PlayStarted != 2*2 {
		t.Fatalf("joins to play: a %d, b %d; want 4 each", sa.Stats().PlayStarted, sb.Stats().PlayStarted)
	}
}
