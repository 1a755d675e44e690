package mcbackend

import (
	"bytes"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
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
// of held echo: the backend must stop reading the client rather than hold
// without bound, and echo everything once read. Held bytes pass
// maxHeldBytes only when the loop reads that much within one ReplyDelay;
// on a loaded machine one 4 MiB write need not come that fast (make stress
// saw it never pause), so the client writes 4 MiB at a time until the
// backend has paused it, up to 64 MiB, and the echo is read all along.
func TestReplyDelayPausesAClientThatHoldsTooMuch(t *testing.T) {
	const delay = 20 * time.Millisecond
	srv, addr := startBackend(t, Config{ReplyDelay: delay, Reactor: reactor.Config{Loops: 1}})
	c := login1710(t, addr, "Alex")
	// The reader reads the echo until it has want bytes, known (>= 0) only
	// once the writer has stopped: it is set before the last write, whose
	// echo is thus read after it is known.
	var want atomic.Int64
	want.Store(-1)
	type echo struct {
		got []byte
		err error
	}
	read := make(chan echo, 1)
	_ = c.conn.SetReadDeadline(time.Now().Add(2 * waitfor.Timeout))
	go func() {
		var e echo
		buf := make([]byte, 256<<10)
		for w := want.Load(); w < 0 || int64(len(e.got)) < w; w = want.Load() {
			var n int
			n, e.err = c.r.Read(buf)
			e.got = append(e.got, buf[:n]...)
			if e.err != nil {
				break
			}
		}
		read <- e
	}()
	chunk := func(i int) []byte {
		var b []byte
		for j := range 64 { // 64 frames of 64 KiB: 4 MiB a write
			b = append(b, c.frame(0x03, playPacket(uint32(i*64+j), 64<<10))...)
		}
		return b
	}
	var stream []byte
	for i := 0; i < 16 && srv.Stats().Reactor.PauseEvents == 0; i++ { // 64 MiB at most
		b := chunk(i)
		if _, err := c.conn.Write(b); err != nil {
			t.Fatalf("writing: %v", err)
		}
		stream = append(stream, b...)
	}
	last := c.frame(0x03, playPacket(1<<20, 5))
	stream = append(stream, last...)
	want.Store(int64(len(stream)))
	if _, err := c.conn.Write(last); err != nil {
		t.Fatalf("writing: %v", err)
	}
	e := <-read
	if e.err != nil {
		t.Fatalf("reading the echo after %d of %d bytes: %v", len(e.got), len(stream), e.err)
	}
	if !bytes.Equal(e.got, stream) {
		t.Fatalf("echo differs: %d bytes read, %d written", len(e.got), len(stream))
	}
	st := srv.Stats()
	if st.EchoBytes != int64(len(stream)) {
		t.Fatalf("echo bytes %d, want %d", st.EchoBytes, len(stream))
	}
	if st.Reactor.PauseEvents == 0 {
		t.Fatalf("%d bytes written, held for %v, and the client was never paused", len(stream), delay)
	}
}
