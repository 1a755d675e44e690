package tlvserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/tidegate/tidegate/protocol/tlv"
	"github.com/tidegate/tidegate/reactor"

	"github.com/rs/zerolog"
)

func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.Reactor.Addrs = []string{"tcp://127.0.0.1:0"}
	if cfg.Reactor.Loops == 0 {
		cfg.Reactor.Loops = 2
	}
	cfg.Reactor.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return s
}

func dial(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// readFrame reads one whole frame.
func readFrame(t *testing.T, r io.Reader, f tlv.Format) (tlv.Header, []byte) {
	t.Helper()
	hdr := make([]byte, f.HeaderLen())
	if _, err := io.ReadFull(r, hdr); err != nil {
		t.Fatalf("reading header: %v", err)
	}
	h, n, err := f.Decode(hdr)
	if err != nil || n == 0 {
		t.Fatalf("decoding header %x: n=%d err=%v", hdr, n, err)
	}
	body := make([]byte, h.Length)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatalf("reading body of %d bytes: %v", h.Length, err)
	}
	return h, body
}

func TestPipelinedEchoInOrder(t *testing.T) {
	for _, f := range []tlv.Format{tlv.DefaultFormat, {TypeWidth: 2, LengthWidth: 2, MaxBody: 60000}} {
		s := startServer(t, Config{Format: f})
		c := dial(t, s)
		rng := rand.New(rand.NewPCG(7, 8))
		var stream []byte
		type req struct {
			typ  uint16
			body []byte
		}
		var reqs []req
		for i := 0; i < 300; i++ {
			body := make([]byte, rng.IntN(3000))
			for j := range body {
				body[j] = byte(rng.Uint32())
			}
			typ := uint16(1 + rng.IntN(int(f.ErrorType())-1))
			reqs = append(reqs, req{typ, body})
			stream = f.AppendFrame(stream, tlv.Header{Type: typ, KeepAlive: true}, body)
		}
		// Write in random pieces so frames split across reads.
		go func() {
			for len(stream) > 0 {
				n := 1 + rng.IntN(min(len(stream), 5000))
				if _, err := c.Write(stream[:n]); err != nil {
					return
				}
				stream = stream[n:]
			}
		}()
		for i, r := range reqs {
			h, body := readFrame(t, c, f)
			if h.Type != r.typ || !h.KeepAlive || !bytes.Equal(body, r.body) {
				t.Fatalf("format %+v response %d: type %d keepalive %v len %d, want type %d len %d",
					f, i, h.Type, h.KeepAlive, len(body), r.typ, len(r.body))
			}
		}
		if got := s.Stats().Requests; got != int64(len(reqs)) {
			t.Fatalf("stats count %d requests, want %d", got, len(reqs))
		}
	}
}

func TestNoKeepAliveClosesAfterResponse(t *testing.T) {
	s := startServer(t, Config{})
	c := dial(t, s)
	f := tlv.DefaultFormat
	body := bytes.Repeat([]byte("z"), 200000)
	msg := f.AppendFrame(nil, tlv.Header{Type: 3, KeepAlive: true}, []byte("first"))
	msg = f.AppendFrame(msg, tlv.Header{Type: 4}, body)
	msg = f.AppendFrame(msg, tlv.Header{Type: 5, KeepAlive: true}, []byte("never answered"))
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if h, b := readFrame(t, c, f); h.Type != 3 || string(b) != "first" {
		t.Fatalf("first response: %+v %q", h, b)
	}
	if h, b := readFrame(t, c, f); h.Type != 4 || h.KeepAlive || !bytes.Equal(b, body) {
		t.Fatalf("second response: %+v %.80q", h, b)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("after a request without keep-alive: read %d, %v; want EOF", n, err)
	}
	if got := s.Stats().KeepAliveClose; got != 1 {
		t.Fatalf("keep-alive closes %d, want 1", got)
	}
}

func TestBadFramesGetErrorFrameAndClose(t *testing.T) {
	f := tlv.Format{TypeWidth: 1, LengthWidth: 4, MaxBody: 1024}
	cases := []struct {
		name   string
		frame  []byte
		reason string
	}{
		{"body over maximum", f.AppendHeader(nil, tlv.Header{Type: 1, KeepAlive: true, Length: 5000}), "body_too_large"},
		{"error type from client", f.AppendFrame(nil, tlv.Header{Type: f.ErrorType(), KeepAlive: true}, []byte("x")), "error_type_from_client"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, Config{Format: f})
			c := dial(t, s)
			good := f.AppendFrame(nil, tlv.Header{Type: 2, KeepAlive: true}, []byte("ok"))
			if _, err := c.Write(append(good, tc.frame...)); err != nil {
				t.Fatal(err)
			}
			if h, b := readFrame(t, c, f); h.Type != 2 || string(b) != "ok" {
				t.Fatalf("response before the bad frame: %+v %q", h, b)
			}
			h, b := readFrame(t, c, f)
			if h.Type != f.ErrorType() || len(b) == 0 {
				t.Fatalf("want an error frame with a reason, got %+v %q", h, b)
			}
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
				t.Fatalf("connection not closed after error frame: %v", err)
			}
			if got := s.Stats().BadFrames[tc.reason]; got != 1 {
				t.Fatalf("bad frames %q counted %d, want 1", tc.reason, got)
			}
		})
	}
}

// TestUnframableResponseGetsErrorFrameAndClose checks that a handler's
// response the Format cannot carry is not sent: the responses before it
// are, then an error frame naming the length, then the connection closes.
func TestUnframableResponseGetsErrorFrameAndClose(t *testing.T) {
	f := tlv.Format{TypeWidth: 1, LengthWidth: 2, MaxBody: 1024}
	long := make([]byte, 70000)
	s := startServer(t, Config{Format: f, Handler: handlerFunc(func(typ uint16, req []byte) (uint16, []byte) {
		if typ == 9 {
			return typ, long
		}
		return typ, req
	})})
	c := dial(t, s)
	msg := f.AppendFrame(nil, tlv.Header{Type: 2, KeepAlive: true}, []byte("ok"))
	msg = f.AppendFrame(msg, tlv.Header{Type: 9, KeepAlive: true}, []byte("long"))
	msg = f.AppendFrame(msg, tlv.Header{Type: 3, KeepAlive: true}, []byte("never answered"))
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if h, b := readFrame(t, c, f); h.Type != 2 || string(b) != "ok" {
		t.Fatalf("response before the unframable one: %+v %q", h, b)
	}
	h, b := readFrame(t, c, f)
	if h.Type != f.ErrorType() || !bytes.Contains(b, []byte("body length 70000")) {
		t.Fatalf("want an error frame naming the length, got %+v %q", h, b)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("connection not closed after error frame: %v", err)
	}
	if st := s.Stats(); st.Requests != 1 || st.UnframableClose != 1 {
		t.Fatalf("requests answered %d, unframable closes %d; want 1 and 1", st.Requests, st.UnframableClose)
	}
}

// TestNonReadingClientStaysBounded pipelines requests from a client that
// never reads: the server must stop reading it and hold no more than the
// flow-control bound, then answer everything once the client reads.
func TestNonReadingClientStaysBounded(t *testing.T) {
	cfg := Config{Reactor: reactor.Config{Loops: 1, HighWatermark: 256 << 10, LowWatermark: 128 << 10}}
	s := startServer(t, cfg)
	c := dial(t, s)
	f := tlv.DefaultFormat
	body := bytes.Repeat([]byte("p"), 4000)
	frame := f.AppendFrame(nil, tlv.Header{Type: 9, KeepAlive: true}, body)
	const total = 20000 // 80 MB of requests
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	heapBefore := before.HeapAlloc
	go func() {
		for i := 0; i < total; i++ {
			if _, err := c.Write(frame); err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Reactor.Paused == 0 {
		if time.Now().After(deadline) {
			t.Fatal("server never paused the non-reading client")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A check that nothing happens: load can only hide a server that keeps
	// answering (by running it less), not make a correct one fail.
	time.Sleep(300 * time.Millisecond)
	r1 := s.Stats().Requests
	time.Sleep(300 * time.Millisecond)
	if r2 := s.Stats().Requests; r2 != r1 || r1 >= total {
		t.Fatalf("server kept answering a client that does not read: %d -> %d of %d", r1, r2, total)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if grown := int64(ms.HeapAlloc) - int64(heapBefore); grown > 8<<20 {
		t.Fatalf("heap grew by %d bytes while a client that does not read sent %d bytes", grown, r1*int64(len(frame)))
	}
	for i := 0; i < total; i++ {
		h, b := readFrame(t, c, f)
		if h.Type != 9 || len(b) != len(body) {
			t.Fatalf("response %d: %+v len %d", i, h, len(b))
		}
	}
}

func TestIdleTimeout(t *testing.T) {
	s := startServer(t, Config{IdleTimeout: 100 * time.Millisecond})
	// From before the dial: the timer is armed in OnOpen, after it, and a
	// loop timer never fires early, so this holds however loaded the machine
	// is. (Measured from after the dial, the server may have opened the
	// connection while this goroutine waited to run, and the close looks
	// early by that much.)
	start := time.Now()
	c := dial(t, s)
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: %v, want EOF", err)
	}
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Fatalf("closed after %v, before the 100ms idle timeout", el)
	}
	if s.Stats().IdleClose != 1 {
		t.Fatalf("idle closes %d, want 1", s.Stats().IdleClose)
	}
}
