package reactor

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor/fdbudget"
)

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
