package goserver

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/protocol/tlv"

	"github.com/rs/zerolog"
)

func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	cfg.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
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

func frame(f tlv.Format, typ uint16, keepAlive bool, body []byte) []byte {
	return f.AppendFrame(nil, tlv.Header{Type: typ, KeepAlive: keepAlive}, body)
}

func errorFrame(f tlv.Format, err error) []byte { return f.AppendError(nil, err.Error()) }

// exchange writes in and reads until the server closes, returning what it
// sent.
func exchange(t *testing.T, s *Server, in []byte) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(in); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading until close: %v", err)
	}
	return out
}

func TestSemantics(t *testing.T) {
	f := tlv.DefaultFormat
	small := tlv.Format{TypeWidth: 2, LengthWidth: 2, MaxBody: 100}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16,000 B: larger than the 4 KiB buffers
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	tooLarge := f.AppendHeader(nil, tlv.Header{Type: 1, KeepAlive: true, Length: f.MaxBody + 1})
	for _, tc := range []struct {
		name   string
		format tlv.Format
		in     []byte
		want   []byte
	}{
		{"one request without keep-alive", f, frame(f, 3, false, []byte("hi")), frame(f, 3, false, []byte("hi"))},
		{"pipelined, in order, last closes",
			f,
			cat(frame(f, 1, true, []byte("a")), frame(f, 2, true, nil), frame(f, 126, false, []byte("ccc"))),
			cat(frame(f, 1, true, []byte("a")), frame(f, 2, true, nil), frame(f, 126, false, []byte("ccc")))},
		{"bytes after a request without keep-alive are ignored",
			f,
			cat(frame(f, 1, false, []byte("x")), frame(f, 2, true, []byte("y"))),
			frame(f, 1, false, []byte("x"))},
		{"body larger than the buffer streams", f,
			cat(frame(f, 5, true, big), frame(f, 6, false, []byte("end"))),
			cat(frame(f, 5, true, big), frame(f, 6, false, []byte("end")))},
		{"error type from client gets an error frame after earlier responses", f,
			cat(frame(f, 1, true, []byte("ok")), frame(f, 0x7F, true, []byte("bad")), frame(f, 1, true, []byte("never"))),
			cat(frame(f, 1, true, []byte("ok")), errorFrame(f, &tlv.FrameError{Reason: tlv.ReasonErrorTypeFromClient, Value: 0x7F}))},
		{"body too large gets an error frame", f, tooLarge,
			errorFrame(f, &tlv.FrameError{Reason: tlv.ReasonBodyTooLarge, Value: int64(f.MaxBody + 1), Limit: int64(f.MaxBody)})},
		{"truncated request: closed without answer", f, frame(f, 1, true, []byte("abcdef"))[:7], nil},
		{"two-byte fields", small,
			cat(frame(small, 0x1234, true, []byte("wide")), frame(small, 0, false, nil)),
			cat(frame(small, 0x1234, true, []byte("wide")), frame(small, 0, false, nil))},
		{"two-byte fields, body over max", small, small.AppendHeader(nil, tlv.Header{Type: 1, KeepAlive: true, Length: 101}),
			errorFrame(small, &tlv.FrameError{Reason: tlv.ReasonBodyTooLarge, Value: 101, Limit: 100})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, Config{Format: tc.format})
			in := tc.in
			if strings.HasPrefix(tc.name, "truncated") {
				// Half-close so the server sees EOF in the middle of a frame.
				c, err := net.Dial("tcp", s.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				_, _ = c.Write(in)
				_ = c.(*net.TCPConn).CloseWrite()
				out, err := io.ReadAll(c)
				if err != nil || len(out) != 0 {
					t.Fatalf("got %q, %v; want nothing and a close", out, err)
				}
				return
			}
			if got := exchange(t, s, in); !bytes.Equal(got, tc.want) {
				t.Fatalf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestKeepAliveConnectionStaysOpen(t *testing.T) {
	f := tlv.DefaultFormat
	s := start(t, Config{})
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	for i := 0; i < 3; i++ {
		req := frame(f, uint16(i), true, []byte{byte(i), 1, 2})
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(req))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if !bytes.Equal(got, req) {
			t.Fatalf("response %d: got %x want %x", i, got, req)
		}
	}
	if st := s.Stats(); st.Requests != 3 || st.Active != 1 || st.Accepted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestIdleTimeoutCloses(t *testing.T) {
	s := start(t, Config{IdleTimeout: 50 * time.Millisecond})
	// From before the dial: the server sets its read deadline after it
	// accepts, so the close comes 50ms or more after this however loaded the
	// machine is. (From after the dial it may come sooner.)
	began := time.Now()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("got %v; want EOF from the idle close", err)
	}
	if d := time.Since(began); d < 50*time.Millisecond {
		t.Fatalf("closed after %v; want 50ms or more", d)
	}
}

func TestStopClosesConnections(t *testing.T) {
	s := start(t, Config{})
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(2 * time.Second)
	for s.Stats().Active != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("got %v; want EOF after Stop", err)
	}
}

func TestNewRejects(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Addr: "127.0.0.1:0", Format: tlv.Format{TypeWidth: 3, LengthWidth: 4, MaxBody: 1}},
		{Addr: "127.0.0.1:0", BufferSize: 8},
		{Addr: "127.0.0.1:0", IdleTimeout: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
