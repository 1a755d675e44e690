package storm

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// EchoServer is the storm's backend: it echoes every byte of every
// connection back, one goroutine per connection with a plain read/write
// loop (not io.Copy, which splices on Linux through two pipe descriptors per
// connection). It is the same for every proxy under test and far from the
// limits a storm probes: a few thousand connections of small echoes.
type EchoServer struct {
	ln       net.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
	accepted atomic.Int64
}

// Listen binds addr; Serve then echoes what it accepts.
func (s *EchoServer) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("echo backend: listen %s: %w", addr, err)
	}
	s.ln = ln
	s.conns = map[net.Conn]struct{}{}
	return nil
}

// Addr returns the bound listen address.
func (s *EchoServer) Addr() net.Addr { return s.ln.Addr() }

// Accepted returns the number of connections accepted so far.
func (s *EchoServer) Accepted() int64 { return s.accepted.Load() }

// Serve accepts until Close; it returns nil after Close. Running out of
// descriptors makes it wait and retry rather than stop.
func (s *EchoServer) Serve() error {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return fmt.Errorf("echo backend: accept on %s: %w", s.ln.Addr(), err)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.accepted.Add(1)
		go s.echo(c)
	}
}

func (s *EchoServer) echo(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	echoConn(c)
}

// echoConn writes back what it reads from c until either fails.
func echoConn(c net.Conn) {
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
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

// Close stops accepting, closes every connection and waits for their
// goroutines.
func (s *EchoServer) Close() error {
	s.mu.Lock()
	s.closed = true
	err := s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}
