package upgradeload

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// echoBackend is the proxy's backend: one goroutine per connection, each
// writing back what it reads (a plain read/write loop: io.Copy would splice
// through two pipe descriptors per connection on Linux).
type echoBackend struct {
	ln       net.Listener
	serve    func(net.Conn)
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
	accepted atomic.Int64
	err      error // why accepting stopped early
}

// startEcho listens on a free loopback port and serves each connection
// with serve (echo when nil).
func startEcho(serve func(net.Conn)) (*echoBackend, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("echo backend: listen on 127.0.0.1:0: %w", err)
	}
	if serve == nil {
		serve = echo
	}
	b := &echoBackend{ln: ln, serve: serve, conns: map[net.Conn]struct{}{}}
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

// Addr is the address the proxy relays to.
func (b *echoBackend) Addr() string { return b.ln.Addr().String() }

func (b *echoBackend) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			b.mu.Lock()
			closed := b.closed
			b.mu.Unlock()
			if closed {
				return
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				b.mu.Lock()
				if b.err == nil {
					b.err = fmt.Errorf("echo backend: accept on %s: %w (out of descriptors)", b.ln.Addr(), err)
				}
				b.mu.Unlock()
				time.Sleep(5 * time.Millisecond)
				continue
			}
			b.mu.Lock()
			b.err = fmt.Errorf("echo backend: accept on %s: %w", b.ln.Addr(), err)
			b.mu.Unlock()
			return
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			c.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.wg.Add(1)
		b.mu.Unlock()
		b.accepted.Add(1)
		go func() {
			defer b.wg.Done()
			b.serve(c)
			b.mu.Lock()
			delete(b.conns, c)
			b.mu.Unlock()
			c.Close()
		}()
	}
}

// echo writes back what it reads from c until either fails.
func echo(c net.Conn) {
	var buf [readBuf]byte
	for {
		n, err := c.Read(buf[:])
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// failure returns why the backend stopped accepting early, or nil.
func (b *echoBackend) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// resetConns resets every open connection (see clients.close).
func (b *echoBackend) resetConns() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.conns {
		resetClose(c)
	}
}

// Close stops accepting, closes every connection and waits for their
// goroutines.
func (b *echoBackend) Close() {
	b.mu.Lock()
	b.closed = true
	b.ln.Close()
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}
