package reactor

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// TestBufferBudgetBoundsQueuedOutput: 24 clients pipeline 4 MiB each into
// an echo server and do not read. Each connection's watermark alone would
// let the server hold 24 × 1 MiB; the 4 MiB budget holds the process near
// it. Once the clients read, every byte comes back in order.
func TestBufferBudgetBoundsQueuedOutput(t *testing.T) {
	const (
		clients = 24
		size    = 4 << 20
		budget  = 4 << 20
	)
	s, addr := startServer(t, Config{HighWatermark: 1 << 20, LowWatermark: 512 << 10, BufferBudget: budget}, smallSendBuffer{&echoHandler{}})
	data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	var wg sync.WaitGroup
	conns := make([]*net.TCPConn, clients)
	for i := range conns {
		conns[i] = dial(t, addr)
		_ = conns[i].SetReadBuffer(16 << 10)
		wg.Add(1)
		go func(c *net.TCPConn) {
			defer wg.Done()
			_, _ = c.Write(data) // blocks once the server stops reading
		}(conns[i])
	}
	// Wait until the queued total stops moving.
	var peak int64
	waitfor.For(t, "the queued total to stop moving", func() bool {
		a := s.Stats().QueuedBytes
		time.Sleep(300 * time.Millisecond)
		b := s.Stats().QueuedBytes
		peak = max(peak, a, b)
		return a == b && b > 0
	})
	// The budget, plus per connection what it may hold over budget (the
	// floor) and one read that passed it before its producer was stopped.
	bound := int64(budget + clients*(budgetFloor+DefaultReadBufferCap))
	if peak > bound {
		t.Fatalf("queued output peaked at %d bytes with a %d-byte budget (bound %d); without it up to %d",
			peak, budget, bound, clients<<20)
	}
	t.Logf("peak queued %d bytes (budget %d, bound %d)", peak, budget, bound)
	var rg sync.WaitGroup
	errs := make(chan error, clients)
	for i, c := range conns {
		rg.Add(1)
		go func(i int, c *net.TCPConn) {
			defer rg.Done()
			_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
			got := make([]byte, size)
			if _, err := io.ReadFull(c, got); err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(got, data) {
				errs <- io.ErrUnexpectedEOF
			}
		}(i, c)
	}
	rg.Wait()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("after the budget pause: %v", err)
	}
	waitfor.For(t, "the queues to empty", func() bool { return s.Stats().QueuedBytes == 0 })
}

// smallSendBuffer shrinks each accepted socket's kernel send buffer, so that
// output backs up in the process, where the budget applies, rather than in
// the kernel's buffers.
type smallSendBuffer struct{ *echoHandler }

func (h smallSendBuffer) OnOpen(c *Conn) {
	_ = unix.SetsockoptInt(c.gc.Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF, 16<<10)
	h.echoHandler.OnOpen(c)
}
