// Package goserver is the peer that tidegate's TLV server is measured
// against: the idiomatic Go design, one goroutine per connection over the net
// package, with a bufio reader and writer per connection.
//
// It speaks the same protocol (protocol/tlv) with the same semantics as
// session/tlvserver as far as the design allows: each request is answered with its
// own type, keep-alive bit and body, in order; responses are flushed when no
// more input is buffered (one write per batch of pipelined requests); a
// request without the keep-alive bit is answered and then the connection is
// closed; a bad frame gets an error frame with the reason, then the
// connection is closed. It exists for benchmarks, not for production: it is
// deliberately the design tidegate exists to beat.
package goserver

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/benchmarks/connset"
	"github.com/tidegate/tidegate/protocol/tlv"

	"github.com/rs/zerolog"
)

// DefaultBufferSize is the size of each connection's bufio reader and
// writer, the same as bufio's default.
const DefaultBufferSize = 4096

// Config configures a Server.
type Config struct {
	// Addr is the listen address, for example "127.0.0.1:0".
	Addr string
	// Format is the header layout and body limit; zero means tlv.DefaultFormat.
	Format tlv.Format
	// BufferSize is the size of the per-connection reader and writer; 0 means
	// DefaultBufferSize.
	BufferSize int
	// IdleTimeout closes connections that send nothing for this long; 0
	// disables it.
	IdleTimeout time.Duration
	// Logger receives the server's logs.
	Logger zerolog.Logger
}

// Stats are the server's counters.
type Stats struct {
	Accepted  int64 // connections accepted
	Active    int64 // connections open now
	Requests  int64 // requests answered
	BadFrames int64 // connections closed after an error frame
}

// Server is a goroutine-per-connection TLV echo server.
type Server struct {
	cfg Config
	log zerolog.Logger
	ln  net.Listener

	conns connset.Set
	wg    sync.WaitGroup // the accept loop and every connection's goroutine

	accepted  atomic.Int64
	active    atomic.Int64
	requests  atomic.Int64
	badFrames atomic.Int64
}

// New validates cfg and returns a server that is not yet listening.
func New(cfg Config) (*Server, error) {
	cfg.Format = cmp.Or(cfg.Format, tlv.DefaultFormat)
	if err := cfg.Format.Validate(); err != nil {
		return nil, fmt.Errorf("goroutine TLV server: %w", err)
	}
	cfg.BufferSize = cmp.Or(cfg.BufferSize, DefaultBufferSize)
	if cfg.BufferSize < 16 {
		return nil, fmt.Errorf("goroutine TLV server: buffer size %d is below 16 bytes", cfg.BufferSize)
	}
	if cfg.IdleTimeout < 0 {
		return nil, fmt.Errorf("goroutine TLV server: idle timeout %v is negative", cfg.IdleTimeout)
	}
	if cfg.Addr == "" {
		return nil, errors.New("goroutine TLV server: no listen address")
	}
	return &Server{cfg: cfg, log: cfg.Logger}, nil
}

// Start listens and accepts connections in the background.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("goroutine TLV server: listening on %q: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	s.wg.Add(1)
	go s.acceptLoop()
	return nil
}

// Addr returns the bound listen address; nil before Start.
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	return Stats{
		Accepted:  s.accepted.Load(),
		Active:    s.active.Load(),
		Requests:  s.requests.Load(),
		BadFrames: s.badFrames.Load(),
	}
}

// Stop closes the listener and every connection, and waits for their
// goroutines to exit or ctx to end.
func (s *Server) Stop(ctx context.Context) error {
	s.conns.Close()
	if s.ln != nil {
		_ = s.ln.Close()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("goroutine TLV server: stopping: %w", ctx.Err())
	}
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn().Err(err).Msg("accept failed")
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !s.conns.Add(c) {
			_ = c.Close()
			return
		}
		s.wg.Add(1) // the accept loop's own count keeps Stop's Wait from returning before this
		s.accepted.Add(1)
		s.active.Add(1)
		go s.serve(c)
	}
}

// serve runs one connection until it closes.
func (s *Server) serve(c net.Conn) {
	defer func() {
		_ = c.Close()
		s.conns.Remove(c)
		s.active.Add(-1)
		s.wg.Done()
	}()
	cs := connState{
		srv: s,
		c:   c,
		r:   bufio.NewReaderSize(c, s.cfg.BufferSize),
		w:   bufio.NewWriterSize(c, s.cfg.BufferSize),
	}
	err := cs.run()
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	default:
		s.log.Debug().Str("remote", c.RemoteAddr().String()).Err(err).Msg("connection ended")
	}
}

// connState is one connection's reader, writer and scratch header.
type connState struct {
	srv *Server
	c   net.Conn
	r   *bufio.Reader
	w   *bufio.Writer
	hdr [6]byte
	// answered counts requests answered since the last flush; it is added
	// to the server's counter once per flush, not once per request, so
	// that connections on different cores do not contend for it.
	answered int64
}

// flush writes the pending responses and counts them.
func (cs *connState) flush() error {
	cs.srv.requests.Add(cs.answered)
	cs.answered = 0
	return cs.w.Flush()
}

// fill waits until n bytes (at most a buffer's worth) can be taken from the
// reader without blocking. When that needs a read that may block, it first
// flushes the pending responses: responses are written once per batch of
// buffered requests.
func (cs *connState) fill(n int) error {
	n = min(n, cs.r.Size())
	if cs.r.Buffered() >= n {
		return nil
	}
	if err := cs.flush(); err != nil {
		return fmt.Errorf("flushing responses: %w", err)
	}
	if t := cs.srv.cfg.IdleTimeout; t > 0 {
		if err := cs.c.SetReadDeadline(time.Now().Add(t)); err != nil {
			return fmt.Errorf("setting read deadline: %w", err)
		}
	}
	if _, err := cs.r.Peek(n); err != nil {
		return cs.readError(err)
	}
	return nil
}

// run answers requests until the peer closes, a request without keep-alive
// has been answered, or a bad frame has been rejected.
func (cs *connState) run() error {
	f := cs.srv.cfg.Format
	hl := f.HeaderLen()
	for {
		if err := cs.fill(hl); err != nil {
			return err
		}
		hb, err := cs.r.Peek(hl)
		if err != nil {
			return cs.readError(err)
		}
		h, n, err := f.Decode(hb)
		if err == nil {
			err = f.CheckRequest(h)
		}
		if err != nil {
			return cs.reject(err)
		}
		copy(cs.hdr[:], hb)
		if _, err := cs.r.Discard(hl); err != nil {
			return cs.readError(err)
		}
		if err := cs.answer(f, h, n-hl); err != nil {
			return err
		}
		cs.answered++
		if !h.KeepAlive {
			if err := cs.flush(); err != nil {
				return fmt.Errorf("flushing last response: %w", err)
			}
			return nil
		}
	}
}

// answer copies the request's header and body of length bytes to the writer:
// the echo response has the same type, keep-alive bit and body.
func (cs *connState) answer(f tlv.Format, h tlv.Header, length int) error {
	// Wait for the body first (flushing earlier responses if that blocks),
	// so that a response is never split around a blocking read.
	if err := cs.fill(length); err != nil {
		return err
	}
	if _, err := cs.w.Write(cs.hdr[:f.HeaderLen()]); err != nil {
		return fmt.Errorf("writing response header: %w", err)
	}
	if length <= cs.r.Size() {
		body, err := cs.r.Peek(length)
		if err != nil {
			return cs.readError(err)
		}
		if _, err := cs.w.Write(body); err != nil {
			return fmt.Errorf("writing response body of %d bytes: %w", length, err)
		}
		_, _ = cs.r.Discard(length)
		return nil
	}
	// A body larger than the buffer streams through, with no per-request
	// allocation (Decode has bounded it by MaxBody); its response may be
	// cut short if the peer stops sending in the middle.
	if _, err := io.CopyN(cs.w, cs.r, int64(length)); err != nil {
		return cs.readError(fmt.Errorf("copying body of %d bytes: %w", length, err))
	}
	return nil
}

// readError turns a read failure into the connection's end.
func (cs *connState) readError(err error) error {
	if errors.Is(err, io.EOF) {
		// The peer closed: flush what was answered, it may still read.
		_ = cs.flush()
		return io.EOF
	}
	return fmt.Errorf("reading request: %w", err)
}

// reject sends an error frame after the responses already queued, then ends
// the connection.
func (cs *connState) reject(frameErr error) error {
	cs.srv.badFrames.Add(1)
	cs.srv.log.Warn().Str("remote", cs.c.RemoteAddr().String()).Err(frameErr).Msg("bad TLV frame: sending error frame and closing")
	if _, err := cs.w.Write(cs.srv.cfg.Format.AppendError(nil, frameErr.Error())); err != nil {
		return fmt.Errorf("writing error frame: %w", err)
	}
	if err := cs.flush(); err != nil {
		return fmt.Errorf("flushing error frame: %w", err)
	}
	return nil
}
