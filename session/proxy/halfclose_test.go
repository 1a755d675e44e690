package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// payload returns n deterministic bytes and their hash.
func payload(n int, seed uint64) ([]byte, [32]byte) {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{byte(seed), byte(seed + 1)}).Read(b) // in bulk: a call a byte is slow under -race
	return b, sha256.Sum256(b)
}

// readAllSum reads c to EOF and returns how much it read and its hash.
func readAllSum(c net.Conn, deadline time.Duration) (int64, [32]byte, error) {
	_ = c.SetReadDeadline(time.Now().Add(deadline))
	h := sha256.New()
	n, err := io.Copy(h, c)
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return n, sum, err
}

// halfCloseBackend runs one backend connection with serve and reports its
// error. serve ends its side with CloseWrite; the socket is closed only
// when the test ends, so that no orphaned socket is left holding unsent
// data (which the kernel resets under memory pressure).
func halfCloseBackend(t *testing.T, serve func(c *net.TCPConn) error) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	t.Cleanup(func() { close(release); _ = ln.Close() })
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		done <- serve(c.(*net.TCPConn))
		<-release
		c.Close()
	}()
	return ln.Addr().String(), done
}

func wantSum(what string, n int64, got [32]byte, err error, size int, want [32]byte) error {
	if err != nil {
		return fmt.Errorf("%s: after %d bytes: %w", what, n, err)
	}
	if n != int64(size) || got != want {
		return fmt.Errorf("%s: %d bytes (want %d), hash match %v", what, n, size, got == want)
	}
	return nil
}

// TestHalfCloseClientFirst: the client sends its request, shuts down its
// write side (as nc -N and HTTP/1.0 clients do) and waits; the backend reads
// to EOF and then answers. The answer must arrive whole.
func TestHalfCloseClientFirst(t *testing.T) {
	for _, size := range []int{8 << 20, 64 << 20} {
		t.Run(fmt.Sprintf("%dMiB", size>>20), func(t *testing.T) {
			req, reqSum := payload(1<<20, 1)
			resp, respSum := payload(size, 2)
			be, done := halfCloseBackend(t, func(c *net.TCPConn) error {
				n, sum, err := readAllSum(c, 30*time.Second)
				if err := wantSum("backend reading the request", n, sum, err, len(req), reqSum); err != nil {
					return err
				}
				if _, err := c.Write(resp); err != nil {
					return fmt.Errorf("backend answering: %w", err)
				}
				return c.CloseWrite()
			})
			p, addr := startProxy(t, rawConfig(be))
			c := dial(t, addr).(*net.TCPConn)
			defer c.Close()
			if _, err := c.Write(req); err != nil {
				t.Fatal(err)
			}
			if err := c.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			n, sum, err := readAllSum(c, 60*time.Second)
			if err := wantSum("client reading the answer", n, sum, err, size, respSum); err != nil {
				t.Fatalf("%v; proxy stats %+v", err, p.Stats())
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if st := p.Stats(); st.Reactor.HalfClosed < 2 {
				t.Errorf("half-closed connections %d, want both sides (2)", st.Reactor.HalfClosed)
			}
		})
	}
}

// TestHalfCloseBackendFirst is the reverse: the backend sends everything,
// shuts down its write side, and then waits for the client's upload, which
// the client sends only after reading the backend's data to its end.
func TestHalfCloseBackendFirst(t *testing.T) {
	for _, size := range []int{8 << 20, 64 << 20} {
		t.Run(fmt.Sprintf("%dMiB", size>>20), func(t *testing.T) {
			down, downSum := payload(size, 3)
			up, upSum := payload(size, 4)
			be, done := halfCloseBackend(t, func(c *net.TCPConn) error {
				if _, err := c.Write(down); err != nil {
					return fmt.Errorf("backend sending: %w", err)
				}
				if err := c.CloseWrite(); err != nil {
					return err
				}
				n, sum, err := readAllSum(c, 60*time.Second)
				return wantSum("backend reading the upload", n, sum, err, size, upSum)
			})
			_, addr := startProxy(t, rawConfig(be))
			c := dial(t, addr).(*net.TCPConn)
			defer c.Close()
			n, sum, err := readAllSum(c, 60*time.Second)
			if err := wantSum("client reading the download", n, sum, err, size, downSum); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(up); err != nil {
				t.Fatalf("client uploading after the backend's half-close: %v", err)
			}
			if err := c.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			// Both directions have ended: the proxy closes the client.
			if n, _, err := readAllSum(c, 10*time.Second); err != nil || n != 0 {
				t.Fatalf("after both half-closes: read %d bytes, %v; want a clean EOF", n, err)
			}
		})
	}
}

// TestHalfCloseWithOutputQueued: the client stops reading while the backend
// streams, so the proxy has output queued for it, and only then shuts down
// its write side; gnet would drop that queued output with the connection.
// Every byte must still arrive, in both directions.
func TestHalfCloseWithOutputQueued(t *testing.T) {
	const size = 64 << 20
	down, downSum := payload(size, 5)
	up, upSum := payload(256<<10, 6)
	be, done := halfCloseBackend(t, func(c *net.TCPConn) error {
		errc := make(chan error, 1)
		go func() {
			n, sum, err := readAllSum(c, 60*time.Second)
			errc <- wantSum("backend reading the upload", n, sum, err, len(up), upSum)
		}()
		if _, err := c.Write(down); err != nil {
			return fmt.Errorf("backend streaming: %w", err)
		}
		if err := c.CloseWrite(); err != nil {
			return err
		}
		return <-errc
	})
	p, addr := startProxy(t, rawConfig(be))
	c := dial(t, addr).(*net.TCPConn)
	defer c.Close()
	// Let the proxy's output toward this client back up to its watermark
	// and stay there: the backend paused, no pause or resume for 200 ms (the
	// kernel's buffers toward the client are full).
	waitfor.For(t, "the paused output to settle", func() bool {
		st := p.Stats().Reactor
		if st.Paused == 0 {
			return false
		}
		time.Sleep(200 * time.Millisecond)
		now := p.Stats().Reactor
		return now.Paused > 0 && now.PauseEvents == st.PauseEvents
	})
	if _, err := c.Write(up); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the FIN reaches the proxy while its output waits
	n, sum, err := readAllSum(c, 60*time.Second)
	if err := wantSum("client reading the stream", n, sum, err, size, downSum); err != nil {
		t.Fatalf("%v; proxy stats %+v", err, p.Stats())
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := p.Stats().Reactor; st.HalfCloseKept == 0 {
		t.Fatalf("the client's FIN came with no output queued (%+v): this test did not try the copy", st)
	}
}

// TestHalfCloseFinTimeout: after the client's half-close, a backend that
// never finishes is closed after fin_timeout, and the session is counted.
func TestHalfCloseFinTimeout(t *testing.T) {
	release := make(chan struct{})
	be, done := halfCloseBackend(t, func(c *net.TCPConn) error {
		_, _ = io.Copy(io.Discard, c) // to the client's FIN, then never answers
		<-release
		return nil
	})
	defer close(release)
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0", mode: raw, group: main}]
groups: {main: {backends: [{addr: %q}]}}
limits: {fin_timeout: 200ms}
`, be))
	_ = done
	c := dial(t, addr).(*net.TCPConn)
	defer c.Close()
	if _, err := c.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if n, _, err := readAllSum(c, 20*time.Second); err != nil || n != 0 {
		t.Fatalf("read %d bytes, %v; want the proxy to close after fin_timeout", n, err)
	}
	waitStats(t, p, "the fin_timeout end", func(st proxymetrics.Stats) bool { return st.Ended["fin_timeout"] == 1 })
}

// TestHalfCloseMinecraft: the same relay in minecraft mode. After the
// handshake and Login Start are routed and replayed, the client sends its
// data and a FIN; the backend reads to EOF and answers 8 MiB.
func TestHalfCloseMinecraft(t *testing.T) {
	login := append(handshake(mc.Protocol1_7_10, "localhost", mc.NextStateLogin), loginStart("HalfClose")...)
	req, reqSum := payload(1<<20, 7)
	resp, respSum := payload(8<<20, 8)
	be, done := halfCloseBackend(t, func(c *net.TCPConn) error {
		got := make([]byte, len(login))
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, login) {
			return fmt.Errorf("backend: replayed login %q, %v", got, err)
		}
		n, sum, err := readAllSum(c, 30*time.Second)
		if err := wantSum("backend reading the request", n, sum, err, len(req), reqSum); err != nil {
			return err
		}
		if _, err := c.Write(resp); err != nil {
			return err
		}
		return c.CloseWrite()
	})
	_, addr := startProxy(t, mcConfig(be, ""))
	c := dial(t, addr).(*net.TCPConn)
	defer c.Close()
	if _, err := c.Write(append(append([]byte(nil), login...), req...)); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	n, sum, err := readAllSum(c, 60*time.Second)
	if err := wantSum("client reading the answer", n, sum, err, len(resp), respSum); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestStopClosesHalfClosedSessions: a session whose client has half-closed
// is outside gnet; Stop must still close it.
func TestStopClosesHalfClosedSessions(t *testing.T) {
	be, _ := halfCloseBackend(t, func(c *net.TCPConn) error {
		_, _ = io.Copy(io.Discard, c) // to the client's FIN; never answers
		return nil
	})
	p, addr := startProxy(t, rawConfig(be)) // stopped below, before its cleanup
	c := dial(t, addr).(*net.TCPConn)
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	waitStats(t, p, "the half-closed session", func(st proxymetrics.Stats) bool { return st.Reactor.HalfClosed == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); isTimeoutErr(err) {
		t.Fatal("the half-closed client was left open after Stop")
	}
}

func isTimeoutErr(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
