package mcbackend

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"net"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/bufferbudget"
)

// socketBuffer returns a socket Control function that fixes the socket's
// buffer opt (SO_RCVBUF, SO_SNDBUF) at 16 KiB: set on the listener, the
// accepted sockets inherit it, and fixed, the kernel does not grow it, so
// that the echoes the clients do not read pile up in the backend rather
// than in loopback sockets that would grow to 4 MiB each.
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

// startSmallBuffers starts a backend whose accepted sockets have a 16 KiB
// send buffer.
func startSmallBuffers(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	ln, err := (&net.ListenConfig{Control: socketBuffer(syscall.SO_SNDBUF)}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Reactor.Listeners = []net.Listener{ln}
	return startBackend(t, cfg)
}

// echoClient is a logged-in 1.7.10 client that pipelines play frames and
// reads nothing until told to, hashing what it wrote and what it read.
type echoClient struct {
	*testClient
	wrote, read hash.Hash
	size        int
	written     atomic.Int64
	werr, rerr  error
}

// dialEcho dials addr with a 16 KiB receive buffer and logs in as name.
func dialEcho(t *testing.T, addr, name string, size int) *echoClient {
	t.Helper()
	conn, err := (&net.Dialer{Timeout: 5 * time.Second, Control: socketBuffer(syscall.SO_RCVBUF)}).Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	c := login1710On(t, &testClient{t: t, conn: conn, r: bufio.NewReader(conn), threshold: -1}, name)
	_ = conn.SetDeadline(time.Now().Add(240 * time.Second))
	return &echoClient{testClient: c, wrote: sha256.New(), read: sha256.New(), size: size}
}

// writeFrames writes c.size bytes of play frames of random lengths under
// 4 KiB, in writes of about 32 KiB.
func (c *echoClient) writeFrames(seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	buf := make([]byte, 0, 40<<10)
	for left := c.size; left > 0; {
		buf = buf[:0]
		for len(buf) < 32<<10 && left > 0 {
			f := c.frame(0x03, playPacket(rng.Uint32(), rng.IntN(4<<10)))
			if left-len(f) < 16 { // the last frame takes the rest
				f = c.frame(0x03, playPacket(0, left-8))
				for len(f) != left { // a data length that makes a whole frame of left bytes
					f = c.frame(0x03, playPacket(0, left-8+left-len(f)))
				}
			}
			buf = append(buf, f...)
			left -= len(f)
		}
		c.wrote.Write(buf)
		if _, err := c.conn.Write(buf); err != nil {
			c.werr = fmt.Errorf("writing frames after %d bytes: %w", c.written.Load(), err)
			return
		}
		c.written.Add(int64(len(buf)))
	}
}

// TestHalfClosedClientGetsEveryEcho: a client that pipelines its frames,
// shuts down its write side and only then reads gets every echo, though
// most were still queued in the backend when its FIN arrived.
func TestHalfClosedClientGetsEveryEcho(t *testing.T) {
	const size = 1 << 20
	_, addr := startSmallBuffers(t, Config{})
	c := dialEcho(t, addr, "Leaver", size)
	c.writeFrames(1)
	if c.werr != nil {
		t.Fatal(c.werr)
	}
	if err := c.conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(c.read, c.r)
	if err != nil || n != size {
		t.Fatalf("read %d of %d echoed bytes before the close: %v", n, size, err)
	}
	if w, r := c.wrote.Sum(nil), c.read.Sum(nil); !bytes.Equal(w, r) {
		t.Fatalf("echo sha256 %x, frames %x", r, w)
	}
}

// heapObjects returns the live heap at the last collection: the bytes of heap objects it marked.
func heapObjects() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestBufferBudgetBoundsNonReaders floods the backend from clients that
// pipeline play frames and never read: the output queued in the process
// must stay within the budget plus a residue per connection, and so must
// the heap that holds it, while the clients read it back (gnet's pooled
// buffers held up to twice what they queued, uncounted, when gnet queued
// the backend's output); once the clients read, every echo must arrive
// whole and in order (sha256 per connection).
func TestBufferBudgetBoundsNonReaders(t *testing.T) {
	const (
		clients = 200
		size    = 1 << 20 // frame bytes each client writes
		budget  = 8 << 20
		// The residue a connection may add past the budget: the 16 KiB it
		// may hold while the process is over budget, the echo of one
		// read, and the last 16 KiB chunk, counted whole.
		residue = 16<<10 + reactor.DefaultReadBufferCap + 16<<10
		bound   = budget + clients*residue
		// What else the live heap may hold per connection while they
		// read: the backend's read buffer and the test's own clients'
		// buffers, which measured at most 33 MiB in all with 200 clients
		// (the queue included). When gnet queued the output its pooled
		// buffers' capacity came on top: 31-57 MiB in all, over this
		// bound in 5 of 6 runs.
		perConn = 80 << 10
	)
	srv, addr := startSmallBuffers(t, Config{Reactor: reactor.Config{BufferBudget: budget}})
	if q := bufferbudget.Queued(); q != 0 {
		t.Fatalf("%d bytes queued before the flood", q)
	}
	cs := make([]*echoClient, clients)
	for i := range cs {
		cs[i] = dialEcho(t, addr, fmt.Sprintf("Hoarder%d", i), size)
	}
	base := heapObjects()
	var peakQueued, peakHeap atomic.Int64
	sample := func() {
		if q := bufferbudget.Queued(); q > peakQueued.Load() {
			peakQueued.Store(q)
		}
		if h := heapObjects() - base; h > peakHeap.Load() {
			peakHeap.Store(h)
		}
	}
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Add(1)
	go func() {
		defer sampling.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	var writers sync.WaitGroup
	for i, c := range cs {
		writers.Add(1)
		go func() {
			defer writers.Done()
			c.writeFrames(uint64(i))
		}()
	}

	// The flood settles when the backend stops taking frames with
	// connections paused: every connection paused with its frames waiting
	// in the kernel, or echoed whole into its queue and its socket.
	deadline := time.Now().Add(90 * time.Second) // a few seconds unloaded; -race on a loaded machine takes far longer
	last, still := int64(-1), 0
	for still < 20 { // a second without progress: a loaded machine can starve the loops for a while
		if time.Now().After(deadline) {
			t.Fatalf("the backend still takes frames after 90 s (%d bytes echoed)", last)
		}
		time.Sleep(50 * time.Millisecond)
		// Before the budget is reached nothing is paused: a loop starved
		// by a loaded machine is no settling.
		if st := srv.Stats(); st.EchoBytes != last || st.Reactor.Paused == 0 {
			last, still = st.EchoBytes, 0
			continue
		}
		still++
	}
	st := srv.Stats()
	t.Logf("settled after %v: %d of %d frame bytes echoed, %d queued (peak %d, bound %d), %d connections paused",
		time.Since(start).Round(time.Millisecond), st.EchoBytes, clients*size, st.Reactor.QueuedBytes, peakQueued.Load(), bound, st.Reactor.Paused)
	if st.Reactor.Paused == 0 || st.EchoBytes >= clients*size {
		t.Errorf("the flood did not reach the budget: %d connections paused, %d of %d frame bytes echoed",
			st.Reactor.Paused, st.EchoBytes, clients*size)
	}

	// Now every client reads: each gets its whole stream back.
	var readers sync.WaitGroup
	for i, c := range cs {
		readers.Add(1)
		go func() {
			defer readers.Done()
			if n, err := io.CopyN(c.read, c.r, int64(size)); err != nil {
				c.rerr = fmt.Errorf("client %d: reading echoes after %d of %d bytes: %w", i, n, size, err)
			}
		}()
	}
	readers.Wait()
	writers.Wait()
	close(stopSampling)
	sampling.Wait()
	heapBound := int64(bound + clients*perConn)
	t.Logf("every echo read after %v; queued peaked at %d bytes (bound %d), the heap at %d over its start (bound %d)",
		time.Since(start).Round(time.Millisecond), peakQueued.Load(), bound, peakHeap.Load(), heapBound)
	if p := peakQueued.Load(); p > bound {
		t.Errorf("queued output peaked at %d bytes, over the budget %d + %d connections × %d = %d", p, budget, clients, residue, bound)
	}
	if p := peakHeap.Load(); p > heapBound {
		t.Errorf("the heap grew by %d bytes, over the queue's bound %d + %d connections × %d = %d", p, bound, clients, perConn, heapBound)
	}
	for i, c := range cs {
		if c.werr != nil || c.rerr != nil {
			t.Errorf("client %d: %v", i, errors.Join(c.werr, c.rerr))
			continue
		}
		if w, r := c.wrote.Sum(nil), c.read.Sum(nil); !bytes.Equal(w, r) {
			t.Errorf("client %d: echo sha256 %x, frames %x", i, r, w)
		}
	}
}
