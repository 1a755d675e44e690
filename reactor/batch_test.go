package reactor

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/testbytes"
	"github.com/tidegate/tidegate/reactor/writev"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// startBatchServer starts a server for h on an ephemeral loopback port and
// stops it when the test ends.
func startBatchServer(tb testing.TB, cfg Config, h Handler) (*Server, string) {
	tb.Helper()
	cfg.Addrs = []string{"tcp://127.0.0.1:0"}
	if cfg.Loops == 0 {
		cfg.Loops = 1
	}
	cfg.Logger = zerolog.New(zerolog.NewTestWriter(tb)).Level(zerolog.WarnLevel)
	s, err := NewServer(cfg, h)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			tb.Errorf("stop: %v", err)
		}
	})
	a, err := s.Addr(0)
	if err != nil {
		tb.Fatal(err)
	}
	return s, a.String()
}

// batchOnOpen runs write when a connection opens.
type batchOnOpen struct {
	write func(c *Conn)
}

func (h batchOnOpen) OnOpen(c *Conn)       { h.write(c) }
func (h batchOnOpen) OnTraffic(c *Conn)    { c.Discard(-1) }
func (h batchOnOpen) OnClose(*Conn, error) {}

// mixedFrames returns n frames of random sizes around the crossover, with some
// empty and some large ones, and their concatenation.
func mixedFrames(n int, seed uint64) (frames [][]byte, want []byte) {
	rng := rand.New(rand.NewPCG(seed, 3))
	frames = make([][]byte, n)
	for i := range frames {
		var size int
		switch rng.IntN(8) {
		case 0:
			size = 0
		case 1:
			size = 8 << 10
		default:
			size = rng.IntN(2 * writev.DefaultCrossover)
		}
		frames[i] = testbytes.Patterned(size, rng.Uint64())
		want = append(want, frames[i]...)
	}
	return frames, want
}

// writeFrames adds frames to the loop's batch, writes it to c and scribbles
// over the frames, which the caller may do once WriteBatch returns. It
// reports the batch's segments before any flattening past MaxIovecs: each
// frame from the crossover up is one, and each run of shorter ones is one
// (as package writev's tests check).
func writeFrames(c *Conn, frames [][]byte) (segments, queued int, err error) {
	b := c.Loop().Batch()
	copying := false
	for _, f := range frames {
		b.Add(f)
		switch {
		case len(f) == 0:
		case len(f) >= writev.DefaultCrossover:
			segments, copying = segments+1, false
		case !copying:
			segments, copying = segments+1, true
		}
	}
	err = c.WriteBatch(b)
	for _, f := range frames {
		for i := range f {
			f[i] = 0xEE
		}
	}
	return segments, c.OutboundBuffered(), err
}

// batchWrite is what the server did with one batch.
type batchWrite struct {
	segments, queued int
	err              error
}

func TestBatchWriteToSocket(t *testing.T) {
	mixed, mixedWant := mixedFrames(600, 1)
	// Alternating copied and referenced frames: one slice each, past MaxIovecs.
	var many [][]byte
	var manyWant []byte
	for i := 0; i < writev.MaxIovecs/2+20; i++ {
		many = append(many, testbytes.Patterned(7, uint64(i)), testbytes.Patterned(writev.DefaultCrossover+i%100, uint64(i)+1<<32))
		manyWant = append(append(manyWant, many[2*i]...), many[2*i+1]...)
	}
	for _, tc := range []struct {
		name   string
		frames [][]byte
		want   []byte
		minSeg int
		maxSeg int
	}{
		{"mixed", mixed, mixedWant, 2, writev.MaxIovecs},
		{"past writev.MaxIovecs", many, manyWant, writev.MaxIovecs + 1, 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan batchWrite, 1)
			_, addr := startBatchServer(t, Config{}, batchOnOpen{write: func(c *Conn) {
				segs, queued, err := writeFrames(c, tc.frames)
				c.Close()
				done <- batchWrite{segs, queued, err}
			}})
			conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = conn.Close() })
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(conn)
			if err != nil {
				t.Fatal(err)
			}
			w := <-done
			if w.err != nil {
				t.Fatalf("WriteTo: %v", w.err)
			}
			if w.segments < tc.minSeg || w.segments > tc.maxSeg {
				t.Fatalf("the batch had %d segments, want %d..%d: the test does not cover its case", w.segments, tc.minSeg, tc.maxSeg)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("client got %d bytes, want %d identical bytes (first difference at %d)", len(got), len(tc.want), testbytes.FirstDiff(got, tc.want))
			}
		})
	}
}

// TestBatchWriteToSlowReader fills the socket so that writevBatch's first
// writev is partial and hands the rest to gnet; the next batches are written
// while output is queued (gnet's path), one of them past MaxIovecs. The
// frames are overwritten as soon as WriteTo returns, so anything gnet
// referenced instead of copying would show.
func TestBatchWriteToSlowReader(t *testing.T) {
	var batches [][][]byte
	var want []byte
	add := func(frames [][]byte) {
		batches = append(batches, frames)
		for _, f := range frames {
			want = append(want, f...)
		}
	}
	// ~2 MiB in 600 slices: far more than the socket buffers take.
	var big [][]byte
	for i := 0; i < 300; i++ {
		big = append(big, testbytes.Patterned(1+i%50, uint64(i)), testbytes.Patterned(7000+i, uint64(i)+1<<32))
	}
	add(big)
	f, _ := mixedFrames(300, 2)
	add(f)
	var many [][]byte
	for i := 0; i < writev.MaxIovecs/2+20; i++ {
		many = append(many, testbytes.Patterned(3, uint64(i)), testbytes.Patterned(writev.DefaultCrossover, uint64(i)+1<<33))
	}
	add(many)

	results := make(chan []batchWrite, 1)
	_, addr := startBatchServer(t, Config{}, batchOnOpen{write: func(c *Conn) {
		if err := unix.SetsockoptInt(c.gc.Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF, 32<<10); err != nil {
			t.Errorf("SO_SNDBUF: %v", err)
		}
		var ws []batchWrite
		for _, frames := range batches {
			segs, queued, err := writeFrames(c, frames)
			ws = append(ws, batchWrite{segs, queued, err})
		}
		c.Close()
		results <- ws
	}})
	d := net.Dialer{Timeout: 2 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 32<<10)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))

	// Read nothing until the server has written everything, then read in small pieces.
	var ws []batchWrite
	select {
	case ws = <-results:
	case <-time.After(10 * time.Second):
		t.Fatal("server did not write its batches")
	}
	got := make([]byte, 0, len(want))
	buf := make([]byte, 4<<10)
	for reads := 0; ; reads++ {
		n, err := conn.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read after %d bytes: %v", len(got), err)
		}
		if reads%64 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	for i, w := range ws {
		if w.err != nil {
			t.Fatalf("batch %d: WriteTo: %v", i, w.err)
		}
	}
	if ws[0].queued == 0 || ws[0].segments < 2 || ws[0].segments > writev.MaxIovecs {
		t.Fatalf("first batch: %d segments, %d bytes queued: the kernel took it whole, so the partial-write path was not tested",
			ws[0].segments, ws[0].queued)
	}
	if ws[2].segments <= writev.MaxIovecs {
		t.Fatalf("third batch has %d segments, want more than %d", ws[2].segments, writev.MaxIovecs)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("client got %d bytes, want %d identical bytes (first difference at %d)", len(got), len(want), testbytes.FirstDiff(got, want))
	}
}

// loopConnPair connects a blocking raw client socket to a server and returns
// the server's Conn for that connection, to be used only on its loop.
func loopConnPair(tb testing.TB) (*Conn, int) {
	tb.Helper()
	opened := make(chan *Conn, 1)
	_, addr := startBatchServer(tb, Config{}, batchOnOpen{write: func(c *Conn) { opened <- c }})
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = unix.Close(fd) })
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 1<<20)
	sa := &unix.SockaddrInet4{Port: tcp.Port}
	copy(sa.Addr[:], tcp.IP.To4())
	if err := unix.Connect(fd, sa); err != nil {
		tb.Fatalf("connect %s: %v", addr, err)
	}
	select {
	case c := <-opened:
		return c, fd
	case <-time.After(5 * time.Second):
		tb.Fatal("server did not open the connection")
	}
	return nil, 0
}

// onLoop runs f on c's loop and waits for it.
func onLoop(tb testing.TB, c *Conn, f func()) {
	tb.Helper()
	done := make(chan struct{})
	if err := c.Loop().Execute(func() { defer close(done); f() }); err != nil {
		tb.Fatal(err)
	}
	<-done
}

// readFull reads len(p) bytes from a blocking fd without allocating.
func readFull(fd int, p []byte) error {
	for len(p) > 0 {
		n, err := unix.Read(fd, p)
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		p = p[n:]
	}
	return nil
}

// TestBatchWriteToAllocations: writing a batch to a socket allocates nothing
// once the loop's scratch has grown.
func TestBatchWriteToAllocations(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("writevBatch avoids allocation on Linux only; elsewhere gnet's Writev builds an iovec array")
	}
	c, fd := loopConnPair(t)
	frames, want := mixedFrames(60, 9)
	got := make([]byte, len(want))
	var allocs float64
	var failure error
	onLoop(t, c, func() {
		run := func() {
			b := c.Loop().Batch()
			for _, f := range frames {
				b.Add(f)
			}
			if err := c.WriteBatch(b); err != nil && failure == nil {
				failure = err
			}
			if err := readFull(fd, got); err != nil && failure == nil {
				failure = err
			}
		}
		run()
		allocs = testing.AllocsPerRun(200, run)
	})
	if failure != nil {
		t.Fatal(failure)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("bytes read differ from the batch")
	}
	if allocs != 0 {
		t.Fatalf("Batch.WriteTo on a socket allocates %.1f times per batch, want 0", allocs)
	}
}
