package connset

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// conn is one end of a net.Pipe that counts its Close calls.
type conn struct {
	net.Conn
	closes atomic.Int32
}

func (c *conn) Close() error {
	c.closes.Add(1)
	return c.Conn.Close()
}

func newConn(t *testing.T) *conn {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return &conn{Conn: a}
}

func count(s *Set) int {
	n := 0
	s.Each(func(net.Conn) { n++ })
	return n
}

// TestSet: what each sequence of calls leaves in the set, and which
// connections Close closed.
func TestSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s *Set, a, b *conn)
		// left is the number of connections in the set before Close;
		// closedA and closedB say whether Close closed a and b.
		left             int
		closedA, closedB bool
	}{
		{"zero set takes connections", func(t *testing.T, s *Set, a, b *conn) {
			if !s.Add(a) || !s.Add(b) {
				t.Error("Add refused a connection on an open set")
			}
		}, 2, true, true},
		{"adding twice keeps one", func(t *testing.T, s *Set, a, b *conn) {
			s.Add(a)
			s.Add(a)
		}, 1, true, false},
		{"removed connections are left open", func(t *testing.T, s *Set, a, b *conn) {
			s.Add(a)
			s.Add(b)
			s.Remove(a, b)
		}, 0, false, false},
		{"removing one of two", func(t *testing.T, s *Set, a, b *conn) {
			s.Add(a)
			s.Add(b)
			s.Remove(b)
		}, 1, true, false},
		{"removing what is not in the set", func(t *testing.T, s *Set, a, b *conn) {
			s.Add(a)
			s.Remove(b)
		}, 1, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Set
			a, b := newConn(t), newConn(t)
			tc.run(t, &s, a, b)
			if n := count(&s); n != tc.left {
				t.Errorf("%d connections in the set, want %d", n, tc.left)
			}
			if s.Closed() {
				t.Error("Closed before Close")
			}
			s.Close()
			if !s.Closed() {
				t.Error("not Closed after Close")
			}
			if got := a.closes.Load() > 0; got != tc.closedA {
				t.Errorf("a closed by Close: %v, want %v", got, tc.closedA)
			}
			if got := b.closes.Load() > 0; got != tc.closedB {
				t.Errorf("b closed by Close: %v, want %v", got, tc.closedB)
			}
			c := newConn(t)
			if s.Add(c) {
				t.Error("Add took a connection after Close")
			}
			if c.closes.Load() != 0 {
				t.Error("a refused Add closed the connection (the caller does)")
			}
			if count(&s) != tc.left {
				t.Error("a refused Add changed the set")
			}
		})
	}
}

// TestGo: Go's goroutine serves the connection, then takes it out of the
// set and closes it; Close ends a serve blocked on its connection, and Wait
// returns once every goroutine has; after Close, Go closes the connection
// and starts nothing.
func TestGo(t *testing.T) {
	var s Set
	done := newConn(t)
	served := make(chan net.Conn, 1)
	if !s.Go(done, func(c net.Conn) { served <- c }) {
		t.Fatal("Go refused a connection on an open set")
	}
	if c := <-served; c != done {
		t.Fatalf("serve got %v, want the connection given to Go", c)
	}
	for deadline := time.Now().Add(5 * time.Second); done.closes.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the connection was not closed after serve returned")
		}
		time.Sleep(time.Millisecond)
	}

	blocked := newConn(t)
	started := make(chan struct{})
	var readErr atomic.Value
	s.Go(blocked, func(c net.Conn) {
		close(started)
		_, err := c.Read(make([]byte, 1))
		readErr.Store(err)
	})
	<-started
	if n := count(&s); n != 1 {
		t.Fatalf("%d connections in the set while one is served, want 1 (the served one left it)", n)
	}
	s.Close()
	s.Wait()
	if readErr.Load() == nil {
		t.Fatal("Wait returned before the blocked serve did")
	}
	if n := blocked.closes.Load(); n < 1 {
		t.Fatalf("closed %d times, want at least once", n)
	}

	late := newConn(t)
	ran := false
	if s.Go(late, func(net.Conn) { ran = true }) {
		t.Fatal("Go took a connection after Close")
	}
	s.Wait()
	if ran || late.closes.Load() != 1 {
		t.Fatalf("after Close: served %v, closed %d times; want not served and closed once", ran, late.closes.Load())
	}
}
