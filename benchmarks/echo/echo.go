// Package echo is the echo backend of the load tools (storm, upgradeload):
// one goroutine per connection, each writing back what it reads with a
// plain read/write loop. Not io.Copy, which splices on Linux through two
// pipe descriptors per connection: the backend is the same for every proxy
// under test and must stay far from the descriptor limits the tools probe.
package echo

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidegate/tidegate/benchmarks/connset"
)

// DefaultBufferSize is the read buffer of each connection's Loop when
// Server.BufferSize is 0.
const DefaultBufferSize = 4096

// retryDelay is how long Serve waits after an accept that failed for want
// of descriptors before it accepts again.
const retryDelay = 5 * time.Millisecond

// Loop writes back to c what it reads from c, through buf, until a read or
// a write fails. It does not close c.
func Loop(c net.Conn, buf []byte) {
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

// Server is an echo backend: Listen, then Serve, then Close; or Start,
// which runs Serve on a goroutine of its own, then Close. Set its fields
// before Listen or Start.
type Server struct {
	// Handle serves each accepted connection on a goroutine of its own (the
	// connection is closed when it returns); nil means Loop with a buffer
	// of BufferSize bytes.
	Handle func(net.Conn)
	// BufferSize is the read buffer of each connection's Loop; 0 means
	// DefaultBufferSize.
	BufferSize int

	ln       net.Listener
	conns    connset.Set
	accepted atomic.Int64
	mu       sync.Mutex
	failure  error // see Failure

	served   chan struct{} // closed when the Serve that Start ran returned; nil without Start
	serveErr error         // what that Serve returned, read after served
}

// Listen binds addr, such as "127.0.0.1:0".
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("echo backend: listen on %s: %w", addr, err)
	}
	s.ln = ln
	return nil
}

// Start binds addr, such as "127.0.0.1:0", and runs Serve on a goroutine
// of its own until Close.
func (s *Server) Start(addr string) error {
	if err := s.Listen(addr); err != nil {
		return err
	}
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		s.serveErr = s.Serve()
	}()
	return nil
}

// Addr returns the bound listen address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Accepted returns the number of connections served so far.
func (s *Server) Accepted() int64 { return s.accepted.Load() }

// Serve accepts connections until Close, and returns nil after Close. An
// accept that fails for want of descriptors (EMFILE, ENFILE) or times out
// makes it wait and accept again rather than stop; the first that ran out
// of descriptors is kept for Failure. Any other accept error ends Serve
// with that error, which Failure then returns.
func (s *Server) Serve() error {
	handle := s.Handle
	if handle == nil {
		size := s.BufferSize
		if size <= 0 {
			size = DefaultBufferSize
		}
		handle = func(c net.Conn) { Loop(c, make([]byte, size)) }
	}
	serve := func(c net.Conn) {
		s.accepted.Add(1)
		handle(c)
	}
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.conns.Closed() {
				return nil
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				s.mu.Lock()
				if s.failure == nil {
					s.failure = fmt.Errorf("echo backend: accept on %s: %w (out of descriptors)", s.ln.Addr(), err)
				}
				s.mu.Unlock()
				time.Sleep(retryDelay)
				continue
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(retryDelay)
				continue
			}
			err = fmt.Errorf("echo backend: accept on %s: %w", s.ln.Addr(), err)
			s.mu.Lock()
			s.failure = err
			s.mu.Unlock()
			return err
		}
		if !s.conns.Go(c, serve) {
			return nil
		}
	}
}

// Failure returns the accept error that ended Serve early, else the first
// accept that failed for want of descriptors (the backend was then what
// ran out, not the proxy under test), else nil.
func (s *Server) Failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failure
}

// EachConn calls f on every open connection, holding the server's lock: f
// must not call the server's methods.
func (s *Server) EachConn(f func(net.Conn)) { s.conns.Each(f) }

// Close stops accepting, closes every connection and waits for their
// goroutines, and for the Serve that Start ran. It returns the error that
// Serve ended with, else the listener's Close error.
func (s *Server) Close() error {
	s.conns.Close()
	err := s.ln.Close()
	s.conns.Wait()
	if s.served != nil {
		<-s.served
		if s.serveErr != nil {
			err = s.serveErr
		}
	}
	return err
}
