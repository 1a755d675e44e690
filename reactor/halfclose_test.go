package reactor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor/fdbudget"
)

// TestOutQueue: what goes in comes out in order across chunk boundaries,
// whatever the sizes pushed and sent, and the queue holds whole chunks only
// for what it still has (each chunk goes back once it is sent).
func TestOutQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q outQueue
	var want []byte
	next := byte(0)
	for step := 0; step < 2000; step++ {
		if rng.IntN(2) == 0 {
			p := make([]byte, rng.IntN(3*outChunkSize))
			for i := range p {
				p[i] = next
				next++
			}
			q.push(p)
			want = append(want, p...)
		} else if q.Len() > 0 {
			bufs := q.appendBufs(nil, 1+rng.IntN(8))
			var got []byte
			for _, b := range bufs {
				got = append(got, b...)
			}
			if !bytes.Equal(got, want[:len(got)]) {
				t.Fatalf("step %d: the queued bytes differ from those pushed", step)
			}
			n := rng.IntN(len(got) + 1)
			q.consume(n)
			want = want[n:]
		}
		if q.Len() != len(want) {
			t.Fatalf("step %d: Len %d, want %d", step, q.Len(), len(want))
		}
		if max := (len(want)/outChunkSize + 2) * outChunkSize; q.held() > max || (len(want) == 0 && q.held() != 0) {
			t.Fatalf("step %d: holds %d bytes for %d queued", step, q.held(), len(want))
		}
	}
	q.release()
	if q.Len() != 0 || q.held() != 0 {
		t.Fatalf("after release: Len %d, held %d", q.Len(), q.held())
	}
}

// TestOutQueueBufsCap: appendBufs stops at max slices.
func TestOutQueueBufsCap(t *testing.T) {
	var q outQueue
	q.push(make([]byte, 5*outChunkSize+7))
	if n := len(q.appendBufs(nil, 3)); n != 3 {
		t.Fatalf("%d slices, want 3", n)
	}
	if n := len(q.appendBufs(nil, 100)); n != 6 {
		t.Fatalf("%d slices, want 6", n)
	}
}

// finFirst answers a connection's first bytes, shuts down its own write
// side, and records what it sees when the peer's FIN follows.
type finFirst struct {
	mu        sync.Mutex
	eofs      int
	eofFD     int   // the socket the connection had in OnReadEOF
	eofWrite  error // a Write tried in OnReadEOF
	closedErr []error
}

func (h *finFirst) OnOpen(*Conn) {}
func (h *finFirst) OnTraffic(c *Conn) {
	in, _ := c.Peek(-1)
	_ = c.Write(in)
	c.Discard(len(in))
	c.CloseWrite()
}
func (h *finFirst) OnReadEOF(c *Conn) {
	h.mu.Lock()
	h.eofs++
	h.eofFD = c.sockFD()
	h.eofWrite = c.Write([]byte("late"))
	h.mu.Unlock()
	if !c.ReadClosed() {
		panic("OnReadEOF on a connection that is not read-closed")
	}
	c.Close()
}
func (h *finFirst) OnClose(_ *Conn, err error) {
	h.mu.Lock()
	h.closedErr = append(h.closedErr, err)
	h.mu.Unlock()
}

// TestFINAfterOwnFINKeepsNoSocket: a connection that has shut down its
// write side with nothing queued, and then gets the peer's FIN, still gets
// OnReadEOF and the handler's close, as every half-closed connection; its
// answer and FIN reach the peer; it keeps no duplicate socket (nothing can be
// written: Write fails with ErrClosed); and no descriptor is left open.
func TestFINAfterOwnFINKeepsNoSocket(t *testing.T) {
	h := &finFirst{eofFD: -2}
	s, addr := startServer(t, Config{Loops: 1}, h)
	fdsBefore := -1 // counted after the first connection, which opens the loop's lazily made descriptors
	for i := 0; i < 21; i++ {
		if i == 1 {
			fdsBefore = countFDs(t)
		}
		c := dial(t, addr)
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c) // the answer, then the server's FIN
		if err != nil || string(got) != "hello" {
			t.Fatalf("conn %d: read %q (%v), want the answer and EOF", i, got, err)
		}
		if err := c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		waitfor.For(t, fmt.Sprintf("connection %d's close", i), func() bool { h.mu.Lock(); defer h.mu.Unlock(); return len(h.closedErr) == i+1 })
		c.Close()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.eofs != 21 || h.eofFD != -1 || !errors.Is(h.eofWrite, ErrClosed) {
		t.Fatalf("OnReadEOF %d times (want 21), its socket %d (want none: -1), a write there %v (want ErrClosed)", h.eofs, h.eofFD, h.eofWrite)
	}
	if st := s.Stats(); st.Active != 0 || st.HalfClosed != 21 {
		t.Fatalf("active %d (want 0), half-closed %d (want 21)", st.Active, st.HalfClosed)
	}
	waitfor.Check(t, "the closed connections' descriptors to go", func() error {
		if n := countFDs(t); n > fdsBefore {
			return fmt.Errorf("%d open, %d before", n, fdsBefore)
		}
		return nil
	})
}

func countFDs(t *testing.T) int {
	t.Helper()
	n, err := fdbudget.OpenFDs()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
