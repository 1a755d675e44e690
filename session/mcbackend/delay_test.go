package mcbackend

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/tidegate/tidegate/reactor"
)

// TestReplyDelayHoldsEchoInOrder sends play frames at uneven times to two
// clients on one loop and checks that every echo is whole, in order, and
// came at least ReplyDelay after its frame was sent. Only lower bounds are
// asserted: a loaded machine may deliver late, never early.
func TestReplyDelayHoldsEchoInOrder(t *testing.T) {
	const hold = 5 * time.Millisecond
	srv, addr := startBackend(t, Config{ReplyDelay: hold, Reactor: reactor.Config{Loops: 1}})
	clients := []*testClient{login1710(t, addr, "Alex"), login1710(t, addr, "Steve")}
	for round := range 20 {
		for i, c := range clients {
			f := c.frame(0x03, playPacket(uint32(round*2+i), 100+round*37))
			sent := time.Now()
			c.write(f)
			if round%3 == 0 {
				// a second frame right behind the first: the two are held together
				g := c.frame(0x03, playPacket(uint32(1000+round), 5))
				c.write(g)
				f = append(f, g...)
			}
			got := make([]byte, len(f))
			if _, err := io.ReadFull(c.r, got); err != nil {
				t.Fatalf("round %d client %d: reading the echo: %v", round, i, err)
			}
			if waited := time.Since(sent); waited < hold {
				t.Fatalf("round %d client %d: echo after %v, want at least the reply delay %v", round, i, waited, hold)
			}
			if !bytes.Equal(got, f) {
				t.Fatalf("round %d client %d: echo differs", round, i)
			}
		}
		if round%5 == 4 {
			time.Sleep(hold / 2) // let the loop's list empty now and then
		}
	}
	st := srv.Stats()
	if st.HeldWrites == 0 || st.HeldLateNs < 0 {
		t.Fatalf("held writes %d, late %d ns: the echo was not held", st.HeldWrites, st.HeldLateNs)
	}
}

// TestReplyDelayPausesAClientThatHoldsTooMuch fills more than maxHeldBytes
// of held echo without reading it back: the backend must stop reading the
// client rather than hold without bound, and echo everything once read.
func TestReplyDelayPausesAClientThatHoldsTooMuch(t *testing.T) {
	srv, addr := startBackend(t, Config{ReplyDelay: 20 * time.Millisecond, Reactor: reactor.Config{Loops: 1}})
	c := login1710(t, addr, "Alex")
	var stream []byte
	for i := range 64 {
		stream = append(stream, c.frame(0x03, playPacket(uint32(i), 64<<10))...)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.conn.Write(stream)
		done <- err
	}()
	got := make([]byte, len(stream))
	if _, err := io.ReadFull(c.r, got); err != nil {
		t.Fatalf("reading %d bytes of echo: %v", len(stream), err)
	}
	if err := <-done; err != nil {
		t.Fatalf("writing: %v", err)
	}
	if !bytes.Equal(got, stream) {
		t.Fatal("echo differs")
	}
	st := srv.Stats()
	if st.EchoBytes != int64(len(stream)) {
		t.Fatalf("echo bytes %d, want %d", st.EchoBytes, len(stream))
	}
	if st.Reactor.PauseEvents == 0 {
		t.Fatalf("%d bytes held at once and the client was never paused", len(stream))
	}
}
