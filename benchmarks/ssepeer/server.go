// Package ssepeer is the push server a Go team would write without tidegate:
// net/http serves Server-Sent Events, with a goroutine and a buffered channel
// per subscriber and one Write and Flush per event; publishers speak
// tidegate push's publish protocol (TLV frames of type 1, decoded with
// protocol/push), each on a goroutine of its own.
//
// It is the peer `tidegate-bench bench push --compare` measures `tidegate
// push` against, so it is written to be fair, not a straw man:
//
//   - an event's SSE encoding ("data: ...\n\n") is made once per publish and
//     shared by every subscriber (no formatting per subscriber);
//   - the topic registry is a map under a sync.RWMutex, read-locked while
//     publishing, so publishers of different topics do not serialise;
//   - a publisher never blocks on a subscriber: it sends with select and
//     default, and a subscriber whose channel is full is disconnected (the
//     hub of gorilla/websocket's chat example does the same), counted in
//     Stats.SlowClosed; the subscriber sees its stream end rather than a
//     silent gap. A handler blocked in a write to a subscriber that stopped
//     reading is freed by a write deadline set to now when it is told to go
//     (http.ResponseController), so no deadline is set per write;
//   - the response sets "Transfer-Encoding: identity", which net/http
//     documents as the setup for SSE: no chunk framing, the body ends when
//     the connection closes (as tidegate's does), so the same client reads
//     both servers.
//
// Subscribers request GET /events?topic=T, the path and query of tidegate
// push's SSE listener.
package ssepeer

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/connset"
	"github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/protocol/tlv"
)

// DefaultBuffer is the default capacity, in events, of a subscriber's
// channel.
const DefaultBuffer = 1024

// Config describes the server.
type Config struct {
	// PublishAddr and SubscribeAddr are the listen addresses; ":0" ports
	// pick free ones (see Server.PublishAddr and Server.SubscribeAddr).
	PublishAddr, SubscribeAddr string
	// Buffer is the capacity of each subscriber's channel, in events; a
	// subscriber with Buffer events not yet written is disconnected.
	// 0 means DefaultBuffer.
	Buffer int
	// Heartbeat is the period of the ping event each subscriber's goroutine
	// sends (a ticker per subscriber); 0 disables it.
	Heartbeat time.Duration
	Logger    zerolog.Logger
}

// Stats are the server's counters.
type Stats struct {
	// Published counts the events received from publishers.
	Published int64
	// Subscribers is the number of subscribers registered now.
	Subscribers int64
	// SlowClosed counts the subscribers disconnected because their channel
	// was full.
	SlowClosed int64
	// BadFrames counts publisher connections closed for a bad frame.
	BadFrames int64
}

// subscriber is one SSE stream: its handler goroutine takes events from ch.
type subscriber struct {
	ch   chan []byte
	slow chan struct{} // closed (once) when ch was found full
	once sync.Once
	rc   *http.ResponseController
}

// kick tells the subscriber's handler to go, and ends a write it may be
// blocked in.
func (sub *subscriber) kick() {
	sub.once.Do(func() {
		close(sub.slow)
		_ = sub.rc.SetWriteDeadline(time.Now())
	})
}

// Server is the net/http SSE push peer.
type Server struct {
	cfg    Config
	pubLn  net.Listener
	subLn  net.Listener
	http   *http.Server
	mu     sync.RWMutex
	topics map[string]map[*subscriber]struct{}

	pubConns connset.Set
	wg       sync.WaitGroup // both listeners' loops and every publisher's goroutine

	// conns counts the subscribe connections net/http holds, so that Stop
	// returns once they are all closed.
	conns                                  atomic.Int64
	published, subs, slowClosed, badFrames atomic.Int64
}

// New listens on both addresses; Serve is started by Start.
func New(cfg Config) (*Server, error) {
	cfg.Buffer = cmp.Or(cfg.Buffer, DefaultBuffer)
	if cfg.Buffer < 1 || cfg.Heartbeat < 0 {
		return nil, fmt.Errorf("ssepeer: buffer %d, heartbeat %v: want a positive buffer and a heartbeat >= 0", cfg.Buffer, cfg.Heartbeat)
	}
	pl, err := net.Listen("tcp", cfg.PublishAddr)
	if err != nil {
		return nil, fmt.Errorf("ssepeer: publish listener on %s: %w", cfg.PublishAddr, err)
	}
	sl, err := net.Listen("tcp", cfg.SubscribeAddr)
	if err != nil {
		pl.Close()
		return nil, fmt.Errorf("ssepeer: subscribe listener on %s: %w", cfg.SubscribeAddr, err)
	}
	s := &Server{cfg: cfg, pubLn: pl, subLn: sl, topics: map[string]map[*subscriber]struct{}{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+push.EventsPath, s.serveEvents)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ConnState: func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.conns.Add(-1)
		}
	}}
	return s, nil
}

// PublishAddr is the address publishers connect to.
func (s *Server) PublishAddr() net.Addr { return s.pubLn.Addr() }

// SubscribeAddr is the address SSE subscribers connect to.
func (s *Server) SubscribeAddr() net.Addr { return s.subLn.Addr() }

// Start serves both listeners on goroutines of their own.
func (s *Server) Start() {
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(s.subLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Error().Err(err).Msg("ssepeer: subscribe listener failed")
		}
	}()
	go func() {
		defer s.wg.Done()
		s.acceptPublishers()
	}()
}

// Stop closes the listeners and every connection and waits until their
// goroutines have ended and net/http has closed every subscribe connection,
// at most until ctx ends.
func (s *Server) Stop(ctx context.Context) error {
	_ = s.pubLn.Close()
	s.pubConns.Close()
	// SSE handlers never return on their own: Close (not Shutdown) ends
	// their connections, and their request contexts with them.
	err := s.http.Close()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("ssepeer: stopping: %w", ctx.Err())
	}
	for s.conns.Load() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("ssepeer: stopping: %d subscribe connections still open: %w", s.conns.Load(), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("ssepeer: closing the HTTP server: %w", err)
	}
	return nil
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	return Stats{Published: s.published.Load(), Subscribers: s.subs.Load(), SlowClosed: s.slowClosed.Load(), BadFrames: s.badFrames.Load()}
}

func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	topic := r.URL.Query().Get("topic")
	if err := push.CheckTopic([]byte(topic)); err != nil {
		http.Error(w, fmt.Sprintf("topic %q: %v", topic, err), http.StatusBadRequest)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Transfer-Encoding", "identity") // no chunking: the stream ends with the connection
	sub := &subscriber{ch: make(chan []byte, s.cfg.Buffer), slow: make(chan struct{}), rc: http.NewResponseController(w)}
	s.add(topic, sub)
	defer s.remove(topic, sub)
	w.WriteHeader(http.StatusOK)
	fl.Flush()

	var ping <-chan time.Time
	if s.cfg.Heartbeat > 0 {
		t := time.NewTicker(s.cfg.Heartbeat)
		defer t.Stop()
		ping = t.C
	}
	for {
		select {
		case ev := <-sub.ch:
			if _, err := w.Write(ev); err != nil {
				s.kicked(sub)
				return
			}
			fl.Flush()
		case <-ping:
			if _, err := io.WriteString(w, push.SSEPing); err != nil {
				return
			}
			fl.Flush()
		case <-sub.slow:
			s.kicked(sub)
			return
		case <-r.Context().Done():
			return
		}
	}
}

// kicked counts a subscriber whose handler ends because it was told to go.
func (s *Server) kicked(sub *subscriber) {
	select {
	case <-sub.slow:
		s.slowClosed.Add(1)
	default:
	}
}

func (s *Server) add(topic string, sub *subscriber) {
	s.mu.Lock()
	m := s.topics[topic]
	if m == nil {
		m = map[*subscriber]struct{}{}
		s.topics[topic] = m
	}
	m[sub] = struct{}{}
	s.mu.Unlock()
	s.subs.Add(1)
}

func (s *Server) remove(topic string, sub *subscriber) {
	s.mu.Lock()
	m := s.topics[topic]
	delete(m, sub)
	if len(m) == 0 {
		delete(s.topics, topic)
	}
	s.mu.Unlock()
	s.subs.Add(-1)
}

// fanOut hands ev to every subscriber of topic without blocking; a
// subscriber whose channel is full is told to go.
func (s *Server) fanOut(topic []byte, ev []byte) {
	s.mu.RLock()
	for sub := range s.topics[string(topic)] {
		select {
		case sub.ch <- ev:
		default:
			sub.kick()
		}
	}
	s.mu.RUnlock()
}

func (s *Server) acceptPublishers() {
	for {
		c, err := s.pubLn.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.cfg.Logger.Error().Err(err).Msg("ssepeer: accepting a publisher")
			}
			return
		}
		if !s.pubConns.Add(c) {
			_ = c.Close()
			return
		}
		s.wg.Add(1) // the accept loop's own count keeps Stop's Wait from returning before this
		go func() {
			defer s.wg.Done()
			err := s.servePublisher(c)
			if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.cfg.Logger.Debug().Err(err).Str("remote", c.RemoteAddr().String()).Msg("ssepeer: publisher closed")
			}
			s.pubConns.Remove(c)
			_ = c.Close()
		}()
	}
}

// servePublisher reads publish frames until the publisher closes; a bad
// frame gets a TLV error frame and ends the connection.
func (s *Server) servePublisher(c net.Conn) error {
	f := tlv.DefaultFormat
	r := bufio.NewReaderSize(c, 64<<10)
	hdr := make([]byte, f.HeaderLen())
	var body []byte
	for {
		if _, err := io.ReadFull(r, hdr); err != nil {
			return err
		}
		h, n, err := f.Decode(hdr)
		if err == nil {
			err = f.CheckRequest(h)
		}
		if err == nil && h.Type != push.TypePublish {
			err = fmt.Errorf("frame type %d: want %d (publish)", h.Type, push.TypePublish)
		}
		if err != nil {
			return s.reject(c, err)
		}
		if cap(body) < n-len(hdr) {
			body = make([]byte, n-len(hdr))
		}
		body = body[:n-len(hdr)]
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		p, err := push.ParsePublish(body, push.DefaultLimits)
		if err != nil {
			return s.reject(c, err)
		}
		for it := p.Events(); ; {
			payload, ok := it.Next()
			if !ok {
				break
			}
			s.fanOut(p.Topic, push.AppendSSEEvent(make([]byte, 0, len(payload)+len(push.SSEDataPrefix)+2), payload))
		}
		s.published.Add(int64(p.Count))
	}
}

func (s *Server) reject(c net.Conn, err error) error {
	s.badFrames.Add(1)
	_, _ = c.Write(tlv.DefaultFormat.AppendError(nil, err.Error()))
	return fmt.Errorf("ssepeer: bad publish frame: %w", err)
}
