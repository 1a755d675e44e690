package echo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// start starts s and closes it when the test ends: Close must return nil
// (Serve ended by Close, not by an error of its own).
func start(t *testing.T, s *Server) {
	t.Helper()
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := s.Failure(); err != nil {
			t.Errorf("Failure: %v", err)
		}
	})
}

// roundTrip writes msg on a new connection to s and reads it back.
func roundTrip(t *testing.T, s *Server, msg []byte) []byte {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go c.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("reading the echo of %d bytes: %v", len(msg), err)
	}
	return got
}

// TestServerEchoes: every buffer size echoes a message larger than itself
// whole, and each connection is counted.
func TestServerEchoes(t *testing.T) {
	msg := bytes.Repeat([]byte("storm "), 5000)
	for _, size := range []int{0, 1, 7, DefaultBufferSize, 1 << 16} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			s := &Server{BufferSize: size}
			start(t, s)
			for i := range 3 {
				if got := roundTrip(t, s, msg); !bytes.Equal(got, msg) {
					t.Fatalf("connection %d: the echo differs from what was sent", i)
				}
			}
			if n := s.Accepted(); n != 3 {
				t.Fatalf("accepted %d, want 3", n)
			}
		})
	}
}

// TestServerHandle: Handle replaces the echo, and its connection is closed
// when it returns.
func TestServerHandle(t *testing.T) {
	s := &Server{Handle: func(c net.Conn) { io.WriteString(c, "hi") }}
	start(t, s)
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "hi" {
		t.Fatalf("read %q, %v; want \"hi\" then EOF", got, err)
	}
}

// TestServerCloseEndsConnections: Close closes the open connections (their
// client reads EOF) and waits for their goroutines; EachConn sees them
// before.
func TestServerCloseEndsConnections(t *testing.T) {
	var s Server
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	var clients []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		n := 0
		s.EachConn(func(net.Conn) { n++ })
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want 3", n)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after Close: %v", err)
	}
	for i, c := range clients {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("client %d read %v after Close, want EOF", i, err)
		}
	}
}

// listener returns errs from Accept in turn, then blocks until closed;
// idle is closed when Accept first finds no error left, that is once Serve
// has dealt with every one.
type listener struct {
	errs   chan error
	idle   chan struct{}
	once   sync.Once
	closed chan struct{}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case err := <-l.errs:
		return nil, err
	default:
	}
	l.once.Do(func() { close(l.idle) })
	<-l.closed
	return nil, net.ErrClosed
}

func (l *listener) Close() error   { close(l.closed); return nil }
func (l *listener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

type timeout struct{}

func (timeout) Error() string   { return "i/o timeout" }
func (timeout) Timeout() bool   { return true }
func (timeout) Temporary() bool { return true }

// TestServeAcceptErrors: running out of descriptors and time-outs make
// Serve accept again, the first out-of-descriptors error stays as Failure,
// and any other error ends Serve.
func TestServeAcceptErrors(t *testing.T) {
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	enfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.ENFILE)}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		errs    []error
		serve   error  // what Serve returns before Close (nil: it runs until Close)
		failure string // in Failure's error; "" for none
	}{
		{"no error", nil, nil, ""},
		{"out of descriptors", []error{emfile, emfile}, nil, "too many open files (out of descriptors)"},
		{"out of system descriptors", []error{enfile}, nil, "too many open files in system (out of descriptors)"},
		{"the first shortage is kept", []error{enfile, emfile}, nil, "in system"},
		{"time-out", []error{timeout{}}, nil, ""},
		{"another error ends Serve", []error{emfile, boom}, boom, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &listener{errs: make(chan error, len(tc.errs)), idle: make(chan struct{}), closed: make(chan struct{})}
			for _, err := range tc.errs {
				l.errs <- err
			}
			s := &Server{ln: l}
			served := make(chan error, 1)
			go func() { served <- s.Serve() }()
			if tc.serve != nil {
				select {
				case err := <-served:
					if !errors.Is(err, tc.serve) || !strings.Contains(err.Error(), "echo backend: accept on 127.0.0.1:1") {
						t.Errorf("Serve: %v, want an accept error wrapping %v", err, tc.serve)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("Serve did not end on its error")
				}
			} else {
				select {
				case <-l.idle:
				case err := <-served:
					t.Fatalf("Serve ended before Close: %v", err)
				case <-time.After(5 * time.Second):
					t.Fatal("Serve did not accept again after the errors")
				}
			}
			err := s.Failure()
			switch {
			case tc.failure == "" && err != nil:
				t.Errorf("Failure: %v, want nil", err)
			case tc.failure != "" && (err == nil || !strings.Contains(err.Error(), tc.failure)):
				t.Errorf("Failure: %v, want an error containing %q", err, tc.failure)
			}
			if err := s.Close(); err != nil {
				t.Error(err)
			}
			if tc.serve == nil {
				if err := <-served; err != nil {
					t.Errorf("Serve after Close: %v, want nil", err)
				}
			}
		})
	}
}

// TestLoop: Loop echoes through any buffer, and returns when the peer
// closes.
func TestLoop(t *testing.T) {
	msg := []byte(strings.Repeat("0123456789", 100))
	for _, size := range []int{1, 3, 1000, 4096} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			a, b := net.Pipe()
			done := make(chan struct{})
			go func() { defer close(done); Loop(b, make([]byte, size)) }()
			go a.Write(msg)
			got := make([]byte, len(msg))
			a.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(a, got); err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("echo through a %d-byte buffer: %v", size, err)
			}
			a.Close()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Loop did not return when its peer closed")
			}
			b.Close()
		})
	}
}

// TestStartedServerReportsItsEnd: when the listener fails under a Serve that
// Start ran (here closed behind the server's back), Failure says so while
// the server is still open, and Close returns that error.
func TestStartedServerReportsItsEnd(t *testing.T) {
	var s Server
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	s.ln.Close()
	for deadline := time.Now().Add(5 * time.Second); s.Failure() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Serve kept going on a closed listener")
		}
	}
	if err := s.Failure(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Failure: %v, want the accept error", err)
	}
	if err := s.Close(); !errors.Is(err, net.ErrClosed) || !strings.Contains(err.Error(), "echo backend: accept on") {
		t.Errorf("Close: %v, want the error Serve ended with", err)
	}
}
