// Package tlv runs the TLV request/response protocol (protocol/tlv) on the
// reactor: each connection is a state machine on its loop that answers
// pipelined requests in order, with one batched write per read.
package tlvserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tidegate/tidegate/protocol/tlv"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/looptimer"
	"github.com/tidegate/tidegate/reactor/writev"

	"github.com/rs/zerolog"
)

// Handler answers requests. It runs on the connection's loop and must not block.
type Handler interface {
	// Serve returns the response to a request of type typ. resp may alias req;
	// otherwise it must stay unchanged until the callback that carried the
	// request returns (responses are written once per read). A response the
	// Format cannot carry (respType above its ErrorType, or resp longer than
	// its length field holds) is not sent: the client gets an error frame
	// and the connection is closed.
	Serve(typ uint16, req []byte) (respType uint16, resp []byte)
}

// Echo answers each request with its own type and body.
type Echo struct{}

// Serve returns the request unchanged.
func (Echo) Serve(typ uint16, req []byte) (uint16, []byte) { return typ, req }

// Config configures a Server.
type Config struct {
	// Reactor holds the listen addresses, loops and buffer settings.
	Reactor reactor.Config
	// Format is the header layout and body limit; zero means tlv.DefaultFormat.
	Format tlv.Format
	// Handler answers requests; nil means Echo.
	Handler Handler
	// IdleTimeout closes connections that send nothing for this long; 0 disables it.
	IdleTimeout time.Duration
}

// Server is a TLV server.
type Server struct {
	cfg   Config
	dec   tlv.Decoder // cfg.Format's
	enc   tlv.Encoder // cfg.Format's
	log   zerolog.Logger
	rs    *reactor.Server
	stats []loopStats // indexed by reactor.Loop.Index
}

// loopStats are one loop's counters, padded so loops do not share cache lines.
type loopStats struct {
	requests       atomic.Int64
	bytesIn        atomic.Int64
	keepAliveClose atomic.Int64
	idleClose      atomic.Int64
	bodyTooLarge   atomic.Int64
	errorType      atomic.Int64
	unframable     atomic.Int64
	_              [8]byte
}

// Stats are the server's counters.
type Stats struct {
	Reactor        reactor.Stats
	Requests       int64 // requests answered
	BytesIn        int64 // request bytes consumed
	KeepAliveClose int64 // connections closed after a request without the keep-alive bit
	IdleClose      int64 // connections closed by the idle timeout
	// UnframableClose counts connections closed because the handler gave a
	// response the Format cannot carry (a type above the error type, a body
	// past the length field): a bug in the handler, answered with an error
	// frame.
	UnframableClose int64
	BadFrames       map[string]int64
}

// New validates cfg and returns a server that is not yet listening.
func New(cfg Config) (*Server, error) {
	if cfg.Format == (tlv.Format{}) {
		cfg.Format = tlv.DefaultFormat
	}
	dec, err := cfg.Format.Decoder()
	if err != nil {
		return nil, fmt.Errorf("tlv server: %w", err)
	}
	enc, err := cfg.Format.Encoder()
	if err != nil {
		return nil, fmt.Errorf("tlv server: %w", err) // cannot happen: Decoder checked cfg.Format
	}
	if cfg.Handler == nil {
		cfg.Handler = Echo{}
	}
	if cfg.IdleTimeout < 0 {
		return nil, fmt.Errorf("tlv server: idle timeout %v is negative", cfg.IdleTimeout)
	}
	s := &Server{cfg: cfg, dec: dec, enc: enc, log: cfg.Reactor.Logger}
	rs, err := reactor.NewServer(cfg.Reactor, s)
	if err != nil {
		return nil, fmt.Errorf("tlv server: %w", err)
	}
	s.rs = rs
	s.cfg.Reactor = rs.Config()
	s.stats = make([]loopStats, s.cfg.Reactor.Loops)
	return s, nil
}

// Start listens and serves in the background.
func (s *Server) Start() error { return s.rs.Start() }

// Addr returns the bound address of the first listener.
func (s *Server) Addr() net.Addr {
	a, err := s.rs.Addr(0)
	if err != nil {
		return nil
	}
	return a
}

// Stop closes every connection and waits for the loops to exit.
func (s *Server) Stop(ctx context.Context) error { return s.rs.Stop(ctx) }

// Reactor returns the underlying reactor server.
func (s *Server) Reactor() *reactor.Server { return s.rs }

// Stats sums the counters of all loops.
func (s *Server) Stats() Stats {
	st := Stats{Reactor: s.rs.Stats(), BadFrames: map[string]int64{}}
	for i := range s.stats {
		l := &s.stats[i]
		st.Requests += l.requests.Load()
		st.BytesIn += l.bytesIn.Load()
		st.KeepAliveClose += l.keepAliveClose.Load()
		st.IdleClose += l.idleClose.Load()
		st.UnframableClose += l.unframable.Load()
		st.BadFrames[tlv.ReasonBodyTooLarge.String()] += l.bodyTooLarge.Load()
		st.BadFrames[tlv.ReasonErrorTypeFromClient.String()] += l.errorType.Load()
	}
	return st
}

func (s *Server) loopStats(c *reactor.Conn) *loopStats {
	return &s.stats[c.Loop().Index()%len(s.stats)]
}

// session is one connection's state.
type session struct {
	srv        *Server
	c          *reactor.Conn
	lastActive int64
	idle       looptimer.Timer
}

// OnOpen implements reactor.Handler.
func (s *Server) OnOpen(c *reactor.Conn) {
	ss := &session{srv: s, c: c, lastActive: c.Loop().Now()}
	c.Value = ss
	if s.cfg.IdleTimeout > 0 {
		ss.idle.F = ss.onIdleTimer
		c.Loop().Schedule(&ss.idle, s.cfg.IdleTimeout)
	}
}

// OnClose implements reactor.Handler.
func (s *Server) OnClose(c *reactor.Conn, err error) {
	ss := c.Value.(*session)
	c.Loop().Stop(&ss.idle)
}

func (ss *session) onIdleTimer() {
	l := ss.c.Loop()
	idle := ss.srv.cfg.IdleTimeout
	if due := ss.lastActive + int64(idle); due > l.Now() {
		l.ScheduleAt(&ss.idle, due)
		return
	}
	ss.srv.loopStats(ss.c).idleClose.Add(1)
	ss.srv.log.Debug().Str("remote", ss.c.RemoteAddr().String()).Dur("idle", idle).Msg("closing idle connection")
	ss.c.Close()
}

// OnTraffic implements reactor.Handler: it answers every whole request
// buffered, in order, with one batched write.
func (s *Server) OnTraffic(c *reactor.Conn) {
	ss := c.Value.(*session)
	ss.lastActive = c.Loop().Now()
	buf, _ := c.Peek(-1)
	batch := c.Loop().Batch()
	consumed, requests, closeAfter, bad := s.answer(buf, batch)
	if bad != nil {
		s.rejectFrame(c, batch, bad)
	}
	// Count before writing, so that a client that has its answer sees it counted.
	st := s.loopStats(c)
	st.requests.Add(requests)
	st.bytesIn.Add(int64(consumed))
	if closeAfter {
		st.keepAliveClose.Add(1)
	}
	if err := c.WriteBatch(batch); err != nil {
		batch.Reset()
	}
	switch {
	case bad != nil:
		c.Discard(-1)
		c.Close()
	case closeAfter:
		c.Discard(-1)
		c.Close()
	default:
		c.Discard(consumed)
		c.Backpressure()
	}
}

// OnReadEOF implements reactor.HalfCloseHandler: a client that has sent
// its last request still gets every response. The whole requests left
// unread are answered and the connection closes once its output is
// delivered. Being a half-close handler also makes the reactor queue the
// connection's output itself, in pooled 16 KiB chunks that the buffer
// budget counts whole, rather than in gnet's buffers, whose capacity the
// budget does not see.
func (s *Server) OnReadEOF(c *reactor.Conn) {
	buf, _ := c.Peek(-1)
	batch := c.Loop().Batch()
	consumed, requests, _, bad := s.answer(buf, batch)
	if bad != nil {
		s.rejectFrame(c, batch, bad)
	}
	st := s.loopStats(c)
	st.requests.Add(requests)
	st.bytesIn.Add(int64(consumed))
	if err := c.WriteBatch(batch); err != nil {
		batch.Reset()
	}
	c.Close()
}

// answer adds to batch the responses to the whole requests at the start of
// buf, in order. It stops at a partial frame, after a request without the
// keep-alive bit (closeAfter), at a bad frame (bad, not answered), or at a
// request whose response the Format cannot carry (bad, wrapping
// tlv.ErrHeaderRange: a type above the error type or a body longer than
// the length field holds; not answered); consumed is the bytes of the
// requests answered.
//
// A response that is its request's own body with its own type (Echo's) is
// byte for byte the request frame, header included, so it is not encoded:
// such responses are added as one run of buf, and only a response of its
// own costs a header and a segment. At pipeline 64 this makes the work per
// request the header's decoding and the handler's call.
func (s *Server) answer(buf []byte, batch *writev.Batch) (consumed int, requests int64, closeAfter bool, bad error) {
	dec, h := s.dec, s.cfg.Handler
	hl := dec.HeaderLen()
	run := 0 // buf[run:consumed] answers itself
	for consumed < len(buf) {
		hdr, n, err := dec.DecodeRequest(buf[consumed:])
		if err != nil {
			bad = err
			break
		}
		if n == 0 || n > len(buf)-consumed {
			break // the rest of the frame has not arrived
		}
		req := buf[consumed+hl : consumed+n]
		typ, resp := h.Serve(hdr.Type, req)
		if typ != hdr.Type || len(resp) != len(req) || (len(req) > 0 && unsafe.SliceData(resp) != unsafe.SliceData(req)) {
			var head [6]byte // the longest header, encoded here so that a failure adds nothing to the batch
			if err := s.enc.PutHeader(head[:], tlv.Header{Type: typ, KeepAlive: hdr.KeepAlive, Length: len(resp)}); err != nil {
				bad = fmt.Errorf("tlv server: response to a request of type %#x: %w", hdr.Type, err)
				break
			}
			batch.Add(buf[run:consumed])
			batch.Copy(head[:hl])
			batch.Add(resp)
			run = consumed + n
		}
		consumed += n
		requests++
		if !hdr.KeepAlive {
			closeAfter = true
			break
		}
	}
	// Added after the handler ran, so a response changed in place is sent as changed.
	batch.Add(buf[run:consumed])
	return consumed, requests, closeAfter, bad
}

// rejectFrame appends an error frame for a bad request, or for a request
// whose response cannot be framed, to the batch, after the responses to
// the requests before it, and logs it (and counts a bad request).
func (s *Server) rejectFrame(c *reactor.Conn, batch *writev.Batch, err error) {
	var fe *tlv.FrameError
	if errors.As(err, &fe) {
		switch fe.Reason {
		case tlv.ReasonBodyTooLarge:
			s.loopStats(c).bodyTooLarge.Add(1)
		case tlv.ReasonErrorTypeFromClient:
			s.loopStats(c).errorType.Add(1)
		}
		s.log.Warn().Str("remote", c.RemoteAddr().String()).Str("reason", fe.Reason.String()).Err(err).Msg("bad TLV frame: sending error frame and closing")
	} else {
		s.loopStats(c).unframable.Add(1)
		s.log.Error().Str("remote", c.RemoteAddr().String()).Err(err).Msg("handler's response cannot be framed: sending error frame and closing")
	}
	batch.Copy(s.cfg.Format.AppendError(nil, err.Error()))
}
