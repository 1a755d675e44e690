package reactor

import (
	"bytes"
	"crypto/sha256"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/reactor/looptimer"

	"github.com/rs/zerolog"
)

// echoHandler writes back what it reads, through a Batch, with flow control.
type echoHandler struct {
	mu     sync.Mutex
	conns  []*Conn // touched only on loops; the mutex keeps the race detector informed
	closed atomic.Int32
	read   atomic.Int64
}

func (h *echoHandler) OnOpen(c *Conn) {
	h.mu.Lock()
	h.conns = append(h.conns, c)
	h.mu.Unlock()
}

func (h *echoHandler) OnTraffic(c *Conn) {
	b, _ := c.Peek(-1)
	h.read.Add(int64(len(b)))
	batch := c.Loop().Batch()
	batch.Add(b)
	_ = c.WriteBatch(batch)
	c.Discard(len(b))
	c.Backpressure()
}

func (h *echoHandler) OnClose(*Conn, error) { h.closed.Add(1) }

// startServer starts s on an ephemeral loopback port and stops it when the test ends.
func startServer(t *testing.T, cfg Config, h Handler) (*Server, string) {
	t.Helper()
	return startServerLogging(t, cfg, h, zerolog.NewTestWriter(t))
}

func dial(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

func TestEchoManyConns(t *testing.T) {
	h := &echoHandler{}
	_, addr := startServer(t, Config{}, h)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			msg := bytes.Repeat([]byte{byte(i)}, 1000+i*37)
			for j := 0; j < 20; j++ {
				if _, err := c.Write(msg); err != nil {
					t.Error(err)
					return
				}
				got := make([]byte, len(msg))
				if _, err := io.ReadFull(c, got); err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(got, msg) {
					t.Errorf("conn %d: echo differs", i)
					return
				}
			}
		}(i)
	}
	wg.Wait()
}

// TestFlowControlBoundsMemory floods an echo server from a client that does
// not read: the server must stop reading (its buffers stay bounded), and once
// the client reads, every byte must come back in order.
func TestFlowControlBoundsMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pausing is tested on Linux only")
	}
	testFlowControlBoundsMemory(t, Config{HighWatermark: 256 << 10, LowWatermark: 128 << 10, Loops: 1})
}

// TestLevelTriggeredOnly: with edge-triggered polling gnet keeps reading a
// paused connection (measured: 4.6 MB buffered against a 0.6 MB bound), so
// the reactor never asks for it: no non-test file of the reactor or its
// subpackages passes gnet.WithEdgeTriggeredIO.
func TestLevelTriggeredOnly(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte("WithEdgeTriggeredIO(")) {
			t.Errorf("%s asks gnet for edge-triggered polling, under which flow control cannot pause a connection", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testFlowControlBoundsMemory(t *testing.T, cfg Config) {
	h := &echoHandler{}
	s, addr := startServer(t, cfg, h)
	c := dial(t, addr)
	_ = c.SetReadBuffer(64 << 10)

	const total = 64 << 20
	src := make([]byte, total)
	_, _ = rand.NewChaCha8([32]byte{1, 2}).Read(src) // in bulk: a call a byte is slow under -race
	writeDone := make(chan error, 1)
	go func() {
		_, err := c.Write(src)
		writeDone <- err
	}()

	// Give the flood time to hit the watermark, then check the server stopped reading.
	waitfor.For(t, "the flooding connection to pause", func() bool { return s.Stats().Paused == 1 })
	// A check that nothing happens: load can only hide a server that keeps
	// reading (by running it less), not make a correct one fail.
	time.Sleep(200 * time.Millisecond)
	r1 := h.read.Load()
	time.Sleep(300 * time.Millisecond)
	r2 := h.read.Load()
	if r2 != r1 {
		t.Fatalf("server kept reading while paused: %d -> %d bytes", r1, r2)
	}
	if r1 >= total/2 {
		t.Fatalf("server read %d of %d bytes while the client read nothing", r1, total)
	}
	in, out := connBuffers(t, s, h)
	bound := cfg.HighWatermark + 4*DefaultReadBufferCap + DefaultReadBufferCap
	if in+out > bound {
		t.Fatalf("server holds %d inbound + %d outbound bytes, bound %d", in, out, bound)
	}
	t.Logf("paused after reading %d bytes; holding %d in + %d out", r1, in, out)

	// Now read everything back and compare.
	got := sha256.New()
	if _, err := io.CopyN(got, c, total); err != nil {
		t.Fatalf("reading echo: %v", err)
	}
	if err := <-writeDone; err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(src)
	if !bytes.Equal(got.Sum(nil), want[:]) {
		t.Fatal("echoed bytes differ from sent bytes")
	}
	if st := s.Stats(); st.PauseEvents == 0 {
		t.Fatalf("no pause was counted: %+v", st)
	}
}

// connBuffers returns the inbound and outbound bytes held for the first connection.
func connBuffers(t *testing.T, s *Server, h *echoHandler) (in, out int) {
	t.Helper()
	h.mu.Lock()
	c := h.conns[0]
	h.mu.Unlock()
	done := make(chan struct{})
	if err := c.Loop().Execute(func() {
		in, out = c.InboundBuffered(), c.OutboundBuffered()
		close(done)
	}); err != nil {
		t.Fatal(err)
	}
	<-done
	return in, out
}

// closingHandler sends size bytes on open and closes at once: Close must
// deliver them all to a slow reader.
type closingHandler struct {
	payload []byte
}

func (h *closingHandler) OnOpen(c *Conn) {
	_ = c.Write(h.payload)
	c.Close()
}
func (h *closingHandler) OnTraffic(c *Conn)    { c.Discard(-1) }
func (h *closingHandler) OnClose(*Conn, error) {}

func TestCloseDeliversQueuedOutput(t *testing.T) {
	payload := make([]byte, 16<<20)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	_, addr := startServer(t, Config{}, &closingHandler{payload: payload})
	c := dial(t, addr)
	_ = c.SetReadBuffer(32 << 10)
	time.Sleep(100 * time.Millisecond) // the server has queued most of it by now
	got, err := io.ReadAll(slowReader{c})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatalf("got %d bytes, want %d identical bytes", len(got), len(payload))
	}
}

// slowReader reads in small pieces so the sender's output stays queued.
type slowReader struct{ r io.Reader }

func (s slowReader) Read(p []byte) (int, error) {
	if len(p) > 256<<10 {
		p = p[:256<<10]
	}
	return s.r.Read(p)
}

// timerHandler arms a timer per connection that writes "tick" and closes.
type timerHandler struct{}

type timerConn struct {
	c *Conn
	t looptimer.Timer
}

func (timerHandler) OnOpen(c *Conn) {
	tc := &timerConn{c: c}
	tc.t.F = func() {
		_ = tc.c.Write([]byte("tick"))
		tc.c.Close()
	}
	c.Value = tc
	c.Loop().Schedule(&tc.t, 50*time.Millisecond)
}
func (timerHandler) OnTraffic(c *Conn) { c.Discard(-1) }
func (timerHandler) OnClose(c *Conn, _ error) {
	tc := c.Value.(*timerConn)
	c.Loop().Stop(&tc.t)
}

func TestLoopTimers(t *testing.T) {
	_, addr := startServer(t, Config{}, timerHandler{})
	before := leaktest.Goroutines()
	var conns []net.Conn
	var dialed []time.Time
	for i := 0; i < 50; i++ {
		dialed = append(dialed, time.Now())
		conns = append(conns, dial(t, addr))
	}
	if g := leaktest.Goroutines(); g > before+5 {
		t.Fatalf("goroutines grew from %d to %d with 50 connections", before, g)
	}
	for i, c := range conns {
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "tick" {
			t.Fatalf("got %q", got)
		}
		// The timer is armed in OnOpen, after the dial started, and never
		// fires before its deadline, so this holds however loaded the machine
		// is. (A late timer is not an error here.)
		if el := time.Since(dialed[i]); el < 50*time.Millisecond {
			t.Fatalf("connection %d: timer fired %v after its dial started, before its 50ms deadline", i, el)
		}
	}
}

// TestPausedGaugeCountsFlowControlOnly: not reading a closing connection is
// not flow control, so the Paused gauge follows the other reasons alone,
// also when flow control ends while the connection is closing.
func TestPausedGaugeCountsFlowControlOnly(t *testing.T) {
	l := &Loop{}
	c := newConn(l, nil) // no socket: only the bookkeeping runs
	steps := []struct {
		pause  bool
		reason pauseReason
		want   int64
	}{
		{true, pauseClosing, 0},
		{true, pauseSinkFull, 1},
		{true, pauseUser, 1},
		{false, pauseSinkFull, 1},
		{false, pauseUser, 0},
		{true, pausePeerInboundFull, 1},
		{false, pauseClosing, 1},
		{false, pausePeerInboundFull, 0},
	}
	for i, s := range steps {
		if s.pause {
			c.pauseFor(s.reason)
		} else {
			c.resumeFor(s.reason)
		}
		if got := l.stats.Paused.Load(); got != s.want {
			t.Fatalf("step %d: Paused %d, want %d", i, got, s.want)
		}
	}
	if got := l.stats.PauseEvents.Load(); got != 2 {
		t.Fatalf("PauseEvents %d, want 2", got)
	}
}
