package reactor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/logbuf"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
)

// runOn runs f on l and waits for it.
func runOn(t *testing.T, l *Loop, f func()) {
	t.Helper()
	done := make(chan struct{})
	if err := l.Execute(func() { f(); close(done) }); err != nil {
		t.Fatal(err)
	}
	<-done
}

// TestDrainWakesWithoutPolling floods echo connections whose clients do not
// read until every one is paused. While nothing drains, no waiter may be
// checked, the ticker must not poll and the backlog is not scanned; then each client reads, and every
// byte must come back in order. The fallback that polls every DrainPoll is
// run the same way.
func TestDrainWakesWithoutPolling(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pausing is tested on Linux only")
	}
	for _, mode := range []struct {
		name string
		poll bool
	}{{"watcher", false}, {"polling", true}} {
		t.Run(mode.name, func(t *testing.T) {
			cfg := Config{HighWatermark: 256 << 10, LowWatermark: 128 << 10, Loops: 1, pollDrain: mode.poll}
			testDrainResumes(t, cfg, 30, 8<<20)
		})
	}
}

func testDrainResumes(t *testing.T, cfg Config, conns, size int) {
	h := &echoHandler{}
	s, addr := startServer(t, cfg, h)
	src := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{5, 6}).Read(src) // in bulk: a call a byte is slow under -race
	cs := make([]*net.TCPConn, conns)
	writes := make(chan error, conns)
	for i := range cs {
		cs[i] = dial(t, addr)
		_ = cs[i].SetReadBuffer(64 << 10)
		go func(c *net.TCPConn) {
			_, err := c.Write(src)
			writes <- err
		}(cs[i])
	}
	waitfor.Check(t, fmt.Sprintf("all %d connections to pause", conns), func() error {
		if st := s.Stats(); st.Paused != int64(conns) {
			return fmt.Errorf("%d paused (server read %d bytes; %+v)", st.Paused, h.read.Load(), st)
		}
		return nil
	})

	l := s.Loops()[0]
	var checks, waiters int
	var waiting int32
	runOn(t, l, func() { checks, waiters = l.drainChecks, len(l.waiters) })
	if waiters != conns {
		t.Fatalf("%d connections paused but %d wait for drain", conns, waiters)
	}
	// The last acknowledgements may still free some room (delayed ACKs);
	// let them settle, then nothing at all may happen.
	for settle := time.Now().Add(5 * time.Second); !cfg.pollDrain && time.Now().Before(settle); {
		time.Sleep(100 * time.Millisecond)
		prev := checks
		runOn(t, l, func() { checks = l.drainChecks })
		if checks == prev {
			break
		}
	}
	time.Sleep(200 * time.Millisecond)
	var after int
	var scanning bool
	runOn(t, l, func() { after, waiting, scanning = l.drainChecks, l.waiting.Load(), l.budgetTimer.Armed() })
	if !cfg.pollDrain {
		if waiting != 0 {
			t.Fatalf("the ticker polls %d waiters though no socket has room", waiting)
		}
		if after != checks {
			t.Fatalf("%d drain checks in 200 ms while nothing drained", after-checks)
		}
		if scanning {
			t.Fatal("the backlog scan runs every Tick though no queued output can drain")
		}
	} else if after == checks {
		t.Fatal("polling fallback: no drain check in 200 ms")
	}

	for i, c := range cs {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		got := make([]byte, size)
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("connection %d: reading the echo: %v", i, err)
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("connection %d: echoed bytes differ from the sent ones", i)
		}
	}
	for range cs {
		if err := <-writes; err != nil {
			t.Fatal(err)
		}
	}
	runOn(t, l, func() { waiters = len(l.waiters) + l.polled + len(l.waitByFD) })
	if waiters != 0 {
		t.Fatalf("waiter bookkeeping left after every connection drained: %d", waiters)
	}
}

// burstHandler answers "go" with one big write and many small ones, so
// that gnet's queue ends in more slices than one writev takes, then echoes.
type burstHandler struct {
	big   []byte
	small int
}

func (h *burstHandler) OnOpen(*Conn) {}

func (h *burstHandler) OnTraffic(c *Conn) {
	b, _ := c.Peek(-1)
	if c.Value == nil {
		if len(b) < 2 {
			return
		}
		c.Value = true
		c.Discard(2)
		_ = c.Write(h.big)
		for i := 0; i < h.small; i++ {
			_ = c.Write([]byte{byte(i)})
		}
		c.Backpressure()
		return
	}
	_ = c.Write(b)
	c.Discard(len(b))
}

func (h *burstHandler) OnClose(*Conn, error) {}

// TestDrainWithoutKernelWakeup: gnet writes at most 1024 slices per
// writable event, so a queue of many small writes drains in writes that
// never fill the socket, and the kernel has no reason to wake the watcher
// again. Such a waiter must be polled until it drains, or it would never
// resume: the echo after the burst proves it did.
func TestDrainWithoutKernelWakeup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pausing is tested on Linux only")
	}
	h := &burstHandler{big: bytes.Repeat([]byte{0xAB}, 8<<20), small: 20000}
	s, addr := startServer(t, Config{HighWatermark: 256 << 10, LowWatermark: 4 << 10, Loops: 1}, h)
	c := dial(t, addr)
	if _, err := c.Write([]byte("go")); err != nil {
		t.Fatal(err)
	}
	waitfor.For(t, "the connection to pause", func() bool { return s.Stats().Paused == 1 })
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	want := len(h.big) + h.small
	got := make([]byte, want)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("reading the burst: %v", err)
	}
	for i := 0; i < h.small; i++ {
		if got[len(h.big)+i] != byte(i) {
			t.Fatalf("small write %d arrived out of order", i)
		}
	}
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	if _, err := io.ReadFull(c, one); err != nil || one[0] != 'x' {
		t.Fatalf("no echo after the burst drained (%v): the connection was never read again", err)
	}
}

// startServerLogging starts s on an ephemeral loopback port, its warnings
// logged to w, and stops it when the test ends.
func startServerLogging(t *testing.T, cfg Config, h Handler, w io.Writer) (*Server, string) {
	t.Helper()
	cfg.Addrs = []string{"tcp://127.0.0.1:0"}
	if cfg.Loops == 0 {
		cfg.Loops = 2
	}
	cfg.Logger = zerolog.New(w).Level(zerolog.WarnLevel)
	s, err := NewServer(cfg, h)
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
	a, err := s.Addr(0)
	if err != nil {
		t.Fatal(err)
	}
	return s, a.String()
}

// readToReset reads c until the server resets it, wants what arrived before
// the reset to be the start of payload, and returns it.
func readToReset(t *testing.T, c net.Conn, payload []byte) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	switch {
	case err == nil:
		t.Fatalf("clean end of stream after %d of %d bytes: the truncation was silent", len(got), len(payload))
	case !errors.Is(err, syscall.ECONNRESET):
		t.Fatalf("after %d bytes: %v, want ECONNRESET", len(got), err)
	case len(got) > len(payload) || !bytes.Equal(got, payload[:len(got)]):
		t.Fatal("the bytes before the reset differ from the sent ones")
	}
	return got
}

// TestLingerExpiry: the server writes 5 MiB and closes while the client
// does not read. Past a short linger the connection must be reset, so the
// client sees ECONNRESET and never a clean end after fewer bytes; the
// expiry is counted and logged with the bytes still queued. With a linger
// long enough, every byte arrives and the end is clean.
func TestLingerExpiry(t *testing.T) {
	payload := make([]byte, 5<<20)
	for i := range payload {
		payload[i] = byte(i * 13)
	}
	t.Run("expired", func(t *testing.T) {
		var logs logbuf.Buffer
		s, addr := startServerLogging(t, Config{Linger: 200 * time.Millisecond}, &closingHandler{payload: payload}, &logs)
		c := dial(t, addr)
		_ = c.SetReadBuffer(32 << 10)
		waitfor.For(t, "the linger to expire", func() bool { return s.Stats().LingerExpired == 1 })
		got := readToReset(t, c, payload)
		if len(got) == len(payload) {
			t.Fatalf("all %d bytes arrived before the reset, so the linger did not cut anything", len(got))
		}
		st := s.Stats()
		if st.LingerQueuedBytes <= 0 || st.LingerQueuedBytes > int64(len(payload)-len(got)) {
			t.Fatalf("LingerQueuedBytes %d: want 1..%d (the %d bytes that did not arrive)",
				st.LingerQueuedBytes, len(payload)-len(got), len(payload)-len(got))
		}
		log := logs.String()
		if want := fmt.Sprintf(`"queued_bytes":%d`, st.LingerQueuedBytes); !strings.Contains(log, want) {
			t.Fatalf("log lacks %s:\n%s", want, log)
		}
		t.Logf("reset after %d bytes; %d were queued at expiry", len(got), st.LingerQueuedBytes)
	})
	t.Run("long enough", func(t *testing.T) {
		s, addr := startServer(t, Config{Linger: 20 * time.Second}, &closingHandler{payload: payload})
		c := dial(t, addr)
		_ = c.SetReadBuffer(32 << 10)
		time.Sleep(300 * time.Millisecond)
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("after %d bytes: %v, want a clean end", len(got), err)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("got %d bytes, want the %d sent", len(got), len(payload))
		}
		if n := s.Stats().LingerExpired; n != 0 {
			t.Fatalf("LingerExpired %d", n)
		}
	})
}

// abortingHandler writes payload and aborts at once.
type abortingHandler struct{ payload []byte }

func (h *abortingHandler) OnOpen(c *Conn) {
	_ = c.Write(h.payload)
	c.Abort()
}
func (h *abortingHandler) OnTraffic(c *Conn)    { c.Discard(-1) }
func (h *abortingHandler) OnClose(*Conn, error) {}

// TestAbortWithOutputResets: an Abort with output still queued must reset
// the connection, so the peer never sees a clean end of a truncated stream;
// it is counted with the bytes that were still queued. An Abort with
// nothing queued is a plain close.
func TestAbortWithOutputResets(t *testing.T) {
	t.Run("queued", func(t *testing.T) {
		payload := make([]byte, 8<<20)
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		s, addr := startServer(t, Config{}, &abortingHandler{payload: payload})
		c := dial(t, addr)
		waitfor.For(t, "the aborted connection to close", func() bool { return s.Stats().Active == 0 })
		readToReset(t, c, payload)
		st := s.Stats()
		// What was queued at the Abort is counted before gnet's one last
		// write, which may still send part of it: it is not bounded by what
		// failed to arrive, only by what was written.
		if st.AbortResets != 1 || st.AbortQueuedBytes <= 0 || st.AbortQueuedBytes > int64(len(payload)) {
			t.Fatalf("AbortResets %d, AbortQueuedBytes %d: want 1 and 1..%d", st.AbortResets, st.AbortQueuedBytes, len(payload))
		}
	})
	t.Run("nothing queued", func(t *testing.T) {
		s, addr := startServer(t, Config{}, &abortingHandler{payload: []byte("bye")})
		c := dial(t, addr)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil || string(got) != "bye" {
			t.Fatalf("got %q, %v; want \"bye\" and a clean end", got, err)
		}
		if n := s.Stats().AbortResets; n != 0 {
			t.Fatalf("AbortResets %d, want 0", n)
		}
	})
}
