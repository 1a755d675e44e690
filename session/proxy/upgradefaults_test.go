package proxy

import (
	"encoding/json"
	"net"
	"os"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/sockpair"
	"github.com/tidegate/tidegate/reactor"
)

// socketFile returns a duplicate of c's socket as a file, as a hand-over
// carries it, closed when the test ends.
func socketFile(t *testing.T, c net.Conn) *os.File {
	t.Helper()
	f, err := c.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestAdoptingASessionWhoseClientReset: a handed-over session whose client
// reset its connection while it travelled is reported lost by adopt, and
// leaves nothing behind: its backend socket is closed, and no session, slot
// or descriptor stays counted.
func TestAdoptingASessionWhoseClientReset(t *testing.T) {
	be := echoListener(t)
	p, addr := startProxy(t, rawConfig(be)+"loops: 1\n")
	// A session first, so that the proxy knows its loop: an adoption then
	// goes to Loop.AdoptPair.
	first := dial(t, addr)
	echo(t, first, []byte("first"))
	held := reactor.HeldFDs()
	clientPeer, client := sockpair.TCP(t)
	sockpair.Reset(t, clientPeer, client)
	backend, backendPeer := sockpair.TCP(t)
	st, _ := json.Marshal(handoverState{Listener: 0, Raw: true, IP: "127.0.0.1", Group: "main", Backend: be})
	err := p.adopt(st, []*os.File{socketFile(t, client), socketFile(t, backend)})
	client.Close()
	backend.Close()
	if err == nil {
		t.Fatal("adopting a session whose client had reset reported success")
	}
	sockpair.ExpectEnded(t, backendPeer, "the backend socket of the session that was lost")
	waitStats(t, p, "only the first session open", func(st Stats) bool { return st.Active == 1 && st.Reactor.Active == 2 })
	echo(t, first, []byte("still relaying"))
	if h := reactor.HeldFDs(); h != held {
		t.Fatalf("after the lost session: %d descriptors held, want %d", h, held)
	}
}
