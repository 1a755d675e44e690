package tlvserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/bufferbudget"
)

// budgetClient pipelines a stream of echo requests and reads nothing until
// told to, hashing what it wrote and what it read.
type budgetClient struct {
	conn    net.Conn
	wrote   hash.Hash
	read    hash.Hash
	size    int
	written atomic.Int64
	werr    error // the writer's
	rerr    error // the reader's
}

// socketBuffer returns a socket Control function that fixes the socket's
// buffer opt (SO_RCVBUF, SO_SNDBUF) at 16 KiB. Set on a listener, accepted
// sockets inherit it; fixed, the kernel does not grow it, so that the
// responses the clients do not read pile up in the server's queues rather
// than in the sockets (which loopback would let grow to 4 MiB each).
func socketBuffer(opt int) func(_, _ string, rc syscall.RawConn) error {
	return func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, opt, 16<<10)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("setting socket buffer %d: %w", opt, serr)
		}
		return nil
	}
}

// noise is where request bodies are cut from, at random offsets.
var noise = func() []byte {
	b := make([]byte, 64<<10)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(b)
	return b
}()

// writeRequests writes c.size bytes of keep-alive requests of random
// lengths under 4 KiB, in writes of about 32 KiB.
func (c *budgetClient) writeRequests(seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	buf := make([]byte, 0, 40<<10)
	for left := c.size; left > 0; {
		buf = buf[:0]
		for len(buf) < 32<<10 && left > 0 {
			body := rng.IntN(4 << 10)
			if left-5-body < 5 { // the last frame takes the rest
				body = left - 5
			}
			buf = append(buf, byte(1+rng.IntN(0x7e))|0x80) // keep-alive bit: the type's high bit
			buf = binary.BigEndian.AppendUint32(buf, uint32(body))
			off := rng.IntN(len(noise) - body + 1)
			buf = append(buf, noise[off:off+body]...)
			left -= 5 + body
		}
		c.wrote.Write(buf)
		if _, err := c.conn.Write(buf); err != nil {
			c.werr = fmt.Errorf("writing requests after %d bytes: %w", c.written.Load(), err)
			return
		}
		c.written.Add(int64(len(buf)))
	}
}

// TestHalfClosedClientGetsEveryResponse: a client that pipelines its
// requests, shuts down its write side and only then reads gets every
// response, though most were still queued when its FIN arrived.
func TestHalfClosedClientGetsEveryResponse(t *testing.T) {
	const size = 1 << 20
	ln, err := (&net.ListenConfig{Control: socketBuffer(syscall.SO_SNDBUF)}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{Reactor: reactor.Config{Listeners: []net.Listener{ln}}})
	conn, err := (&net.Dialer{Timeout: 5 * time.Second, Control: socketBuffer(syscall.SO_RCVBUF)}).Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	c := &budgetClient{conn: conn, wrote: sha256.New(), read: sha256.New(), size: size}
	c.writeRequests(1)
	if c.werr != nil {
		t.Fatal(c.werr)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(c.read, conn)
	if err != nil || n != size {
		t.Fatalf("read %d of %d response bytes before the close: %v", n, size, err)
	}
	if w, r := c.wrote.Sum(nil), c.read.Sum(nil); !bytes.Equal(w, r) {
		t.Fatalf("responses sha256 %x, requests %x", r, w)
	}
}

// TestBufferBudgetBoundsNonReaders floods the server from clients that
// pipeline requests and never read: the output queued in the process must
// stay within the budget plus a residue per connection (TLV's documented
// bound, docs/tlv.md), where without the budget each connection would hold
// up to its high watermark; once the clients read, every response must
// arrive whole and in order.
func TestBufferBudgetBoundsNonReaders(t *testing.T) {
	const (
		clients = 200
		size    = 512 << 10 // request bytes each client writes
		budget  = 8 << 20
		// The residue a connection may add past the budget: the 16 KiB it
		// may hold while the process is over budget, the responses to one
		// read, and the last 16 KiB chunk, counted whole.
		residue = 16<<10 + reactor.DefaultReadBufferCap + 16<<10
		bound   = budget + clients*residue
	)
	ln, err := (&net.ListenConfig{Control: socketBuffer(syscall.SO_SNDBUF)}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{Reactor: reactor.Config{BufferBudget: budget, Listeners: []net.Listener{ln}}})
	dialer := net.Dialer{Timeout: 5 * time.Second, Control: socketBuffer(syscall.SO_RCVBUF)}
	if q := bufferbudget.Queued(); q != 0 {
		t.Fatalf("%d bytes queued before the flood", q)
	}
	var peak atomic.Int64
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Add(1)
	go func() {
		defer sampling.Done()
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		for {
			if q := bufferbudget.Queued(); q > peak.Load() {
				peak.Store(q)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	cs := make([]*budgetClient, clients)
	var writers sync.WaitGroup
	for i := range cs {
		conn, err := dialer.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
		t.Cleanup(func() { _ = conn.Close() })
		c := &budgetClient{conn: conn, wrote: sha256.New(), read: sha256.New(), size: size}
		cs[i] = c
		writers.Add(1)
		go func() {
			defer writers.Done()
			c.writeRequests(uint64(i))
		}()
	}

	// The flood settles when the server stops taking requests: every
	// connection is paused with its requests waiting in the kernel, or has
	// been answered whole into its queue and its socket.
	deadline := time.Now().Add(15 * time.Second)
	last, still := int64(-1), 0
	for still < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("the server still takes requests after 15 s (%d bytes in)", last)
		}
		time.Sleep(50 * time.Millisecond)
		if in := s.Stats().BytesIn; in != last {
			last, still = in, 0
			continue
		}
		still++
	}
	st := s.Stats()
	close(stopSampling)
	sampling.Wait()
	t.Logf("settled after %v: %d of %d request bytes taken, %d queued (peak %d, bound %d), %d connections paused",
		time.Since(start).Round(time.Millisecond), st.BytesIn, clients*size, st.Reactor.QueuedBytes, peak.Load(), bound, st.Reactor.Paused)
	if p := peak.Load(); p > bound {
		t.Errorf("queued output peaked at %d bytes, over the budget %d + %d connections × %d = %d", p, budget, clients, residue, bound)
	}
	if st.Reactor.Paused == 0 || st.BytesIn >= clients*size {
		t.Errorf("the flood did not reach the budget: %d connections paused, %d of %d request bytes taken",
			st.Reactor.Paused, st.BytesIn, clients*size)
	}

	// Now every client reads: each gets its whole stream back.
	var readers sync.WaitGroup
	for i, c := range cs {
		readers.Add(1)
		go func() {
			defer readers.Done()
			if n, err := io.CopyN(c.read, c.conn, size); err != nil {
				c.rerr = fmt.Errorf("client %d: reading responses after %d of %d bytes: %w", i, n, size, err)
			}
		}()
	}
	readers.Wait()
	writers.Wait()
	t.Logf("every response read after %v", time.Since(start).Round(time.Millisecond))
	for i, c := range cs {
		if c.werr != nil || c.rerr != nil {
			t.Errorf("client %d: %v", i, errors.Join(c.werr, c.rerr))
			continue
		}
		if w, r := c.wrote.Sum(nil), c.read.Sum(nil); !bytes.Equal(w, r) {
			t.Errorf("client %d: responses sha256 %x, requests %x", i, r, w)
		}
	}
}
