package budgetload

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/tidegate/tidegate/benchmarks/sockopt"
)

// This file holds the trial's backend: it reads each session's header,
// then nothing until released, and checks what arrived against what the
// clients sent.

// backend accepts sessions, reads each one's header and then nothing until
// released.
type backend struct {
	ln      net.Listener
	release chan struct{}
	ids     atomic.Int64 // sessions whose header arrived
	done    sync.WaitGroup
	mu      sync.Mutex
	got     map[uint64]stream
	conns   []net.Conn
	errs    *errList
	rcvBuf  int
	want    uint64
}

func startBackend(rcvBuf int, want int, errs *errList) (*backend, error) {
	lc := net.ListenConfig{Control: sockopt.Control(rcvBuf, 0, 0)}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("backend listen on 127.0.0.1:0 with SO_RCVBUF %d: %w", rcvBuf, err)
	}
	b := &backend{ln: ln, release: make(chan struct{}), got: map[uint64]stream{}, errs: errs, rcvBuf: rcvBuf, want: uint64(want)}
	go b.accept()
	return b, nil
}

func (b *backend) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(b.rcvBuf)
		}
		b.mu.Lock()
		b.conns = append(b.conns, c)
		b.mu.Unlock()
		b.done.Add(1)
		go b.serve(c)
	}
}

// serve reads c's header, waits for the release, then reads to EOF,
// hashing everything, and closes c.
func (b *backend) serve(c net.Conn) {
	defer b.done.Done()
	defer c.Close()
	var hdr [headerLen]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return // the readiness probe of harness.Start: no header
	}
	id := binary.BigEndian.Uint64(hdr[:])
	if id >= b.want {
		b.errs.add(fmt.Errorf("backend: session id %d in the header, want below %d", id, b.want))
		return
	}
	b.ids.Add(1)
	<-b.release
	h := sha256.New()
	h.Write(hdr[:])
	n, err := io.CopyBuffer(h, c, make([]byte, chunk))
	s := stream{n: headerLen + n, err: err}
	copy(s.sum[:], h.Sum(nil))
	if err != nil {
		b.errs.add(fmt.Errorf("backend: session %d after %d bytes: %w", id, s.n, err))
	}
	b.mu.Lock()
	if _, dup := b.got[id]; dup {
		b.errs.add(fmt.Errorf("backend: session id %d arrived twice", id))
	}
	b.got[id] = s
	b.mu.Unlock()
}

func (b *backend) close() {
	b.ln.Close()
	b.mu.Lock()
	for _, c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	select {
	case <-b.release:
	default:
		close(b.release)
	}
	b.done.Wait()
}

// readCount is how many sessions' streams the backend has recorded.
func (b *backend) readCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.got)
}

// verify compares what each client sent with what the backend read and
// returns how many sessions match in count and hash.
func verify(sent []stream, b *backend, errs *errList) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	ok := 0
	for i, s := range sent {
		if s.err != nil {
			errs.add(s.err)
			continue
		}
		g, found := b.got[uint64(i)]
		switch {
		case !found:
			errs.add(fmt.Errorf("session %d: the backend read nothing after its header", i))
		case g.err != nil:
			// counted when it happened
		case g.n != s.n:
			errs.add(fmt.Errorf("session %d: the backend read %d bytes, the client sent %d", i, g.n, s.n))
		case g.sum != s.sum:
			errs.add(fmt.Errorf("session %d: SHA-256 %x read, %x sent", i, g.sum[:8], s.sum[:8]))
		default:
			ok++
		}
	}
	return ok
}
