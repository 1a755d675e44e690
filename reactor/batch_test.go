package reactor

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// batchOpKind is how a frame enters a Batch in a generated shape.
type batchOpKind uint8

const (
	opAdd     batchOpKind = iota // Add: copied or referenced by size
	opCopy                       // Copy: always copied
	opRef                        // Ref: never copied
	opReserve                    // Reserve, then filled in
)

// batchOp is one call on a Batch.
type batchOp struct {
	kind batchOpKind
	data []byte
}

// batchModel is what a shape must produce: the concatenation of its frames,
// the number of slices it is written as, and the frames that must reach the
// kernel by reference, in order.
type batchModel struct {
	want []byte
	segs int
	refs [][]byte
}

// modelOps predicts what ops produce under crossover x: every referenced
// non-empty frame is a slice of its own, and consecutive copied non-empty
// frames share one slice.
func modelOps(ops []batchOp, x int) batchModel {
	var m batchModel
	lastCopied := false
	for _, op := range ops {
		m.want = append(m.want, op.data...)
		if len(op.data) == 0 {
			continue
		}
		ref := op.kind == opRef || (op.kind == opAdd && len(op.data) >= x)
		if ref {
			m.segs++
			m.refs = append(m.refs, op.data)
			lastCopied = false
			continue
		}
		if !lastCopied {
			m.segs++
		}
		lastCopied = true
	}
	return m
}

// applyOps performs ops on b.
func applyOps(b *Batch, ops []batchOp) {
	for _, op := range ops {
		switch op.kind {
		case opAdd:
			b.Add(op.data)
		case opCopy:
			b.Copy(op.data)
		case opRef:
			b.Ref(op.data)
		case opReserve:
			copy(b.Reserve(len(op.data)), op.data)
		}
	}
}

// patterned returns n bytes that differ from frame to frame, so that a frame
// written twice, dropped or reordered changes the output.
func patterned(n int, seed uint64) []byte {
	p := make([]byte, n+7)
	r := rand.NewPCG(seed, 0x5eed)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(p[i:], r.Uint64())
	}
	return p[:n:n]
}

// adds wraps frames as Add calls.
func adds(frames ...[]byte) []batchOp {
	ops := make([]batchOp, len(frames))
	for i, f := range frames {
		ops[i] = batchOp{kind: opAdd, data: f}
	}
	return ops
}

func sized(sizes ...int) [][]byte {
	fs := make([][]byte, len(sizes))
	for i, n := range sizes {
		fs[i] = patterned(n, uint64(i)+1)
	}
	return fs
}

// batchShapes returns named shapes of calls, the same ones for every crossover.
func batchShapes() []struct {
	name string
	ops  []batchOp
} {
	x := DefaultCrossover
	type shape = struct {
		name string
		ops  []batchOp
	}
	shapes := []shape{
		{"empty batch", nil},
		{"single small frame", adds(sized(10)...)},
		{"single large frame", adds(sized(3 * x)...)},
		{"only empty frames", adds([]byte{}, nil, []byte{})},
		{"empty, frame, empty", adds(nil, patterned(100, 7), []byte{})},
		{"zero-length payloads between frames", adds(sized(0, 40, 0, 0, 2*x, 0, 40, 0)...)},
		{"just below crossover", adds(sized(x-1, x-1, x-1)...)},
		{"at crossover", adds(sized(x, x, x)...)},
		{"just above crossover", adds(sized(x+1, x+1, x+1)...)},
		{"below, at, above, below", adds(sized(x-1, x, x+1, x-1, x-1, 1)...)},
		{"all kinds", []batchOp{
			{opCopy, patterned(5000, 1)}, {opRef, patterned(3, 2)}, {opReserve, patterned(17, 3)},
			{opReserve, patterned(0, 4)}, {opAdd, patterned(9, 5)}, {opRef, []byte{}},
			{opCopy, nil}, {opReserve, patterned(1, 6)}, {opRef, patterned(70, 7)},
		}},
		{"reserve coalesces with copies", []batchOp{
			{opCopy, patterned(6, 1)}, {opReserve, patterned(100, 2)}, {opCopy, patterned(2, 3)},
		}},
	}
	rng := rand.New(rand.NewPCG(20261130, 1))
	for i := 0; i < 24; i++ {
		ops := make([]batchOp, 1+rng.IntN(48))
		for j := range ops {
			var n int
			switch rng.IntN(10) {
			case 0:
				n = 0
			case 1:
				n = 1 + rng.IntN(16<<10)
			default:
				n = rng.IntN(2 * x)
			}
			ops[j] = batchOp{kind: batchOpKind(rng.IntN(4)), data: patterned(n, rng.Uint64())}
			if rng.IntN(3) > 0 {
				ops[j].kind = opAdd
			}
		}
		shapes = append(shapes, shape{"random " + strconv.Itoa(i), ops})
	}
	return shapes
}

// checkBatch compares what b holds with the model: bytes, slice count, and
// which slices alias the caller's frames.
func checkBatch(t *testing.T, b *Batch, m batchModel) {
	t.Helper()
	if b.Len() != len(m.want) {
		t.Fatalf("Len() = %d, want %d", b.Len(), len(m.want))
	}
	if b.Segments() != m.segs {
		t.Fatalf("Segments() = %d, want %d", b.Segments(), m.segs)
	}
	iov := b.Bytes()
	if len(iov) != m.segs {
		t.Fatalf("Bytes() gave %d slices, want %d", len(iov), m.segs)
	}
	if got := bytes.Join(iov, nil); !bytes.Equal(got, m.want) {
		t.Fatalf("Bytes() concatenate to %d bytes that differ from the %d bytes added (first difference at %d)",
			len(got), len(m.want), firstDiff(got, m.want))
	}
	// Every slice is either one referenced frame itself, in order, or lies in
	// the batch's own buffer.
	own := b.buf[:cap(b.buf)]
	next := 0
	for i, p := range iov {
		if len(p) == 0 {
			t.Fatalf("slice %d is empty", i)
		}
		if next < len(m.refs) && unsafe.SliceData(p) == unsafe.SliceData(m.refs[next]) && len(p) == len(m.refs[next]) {
			next++
			continue
		}
		if !within(p, own) {
			t.Fatalf("slice %d (%d bytes) is neither a referenced frame nor part of the batch's buffer", i, len(p))
		}
	}
	if next != len(m.refs) {
		t.Fatalf("%d of %d frames were referenced; the others were copied", next, len(m.refs))
	}
}

// within reports whether p lies inside the memory of buf.
func within(p, buf []byte) bool {
	if len(buf) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	return at >= lo && at+uintptr(len(p)) <= lo+uintptr(len(buf))
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestBatchMatchesConcatenation(t *testing.T) {
	crossovers := []int{0, 1, 100, DefaultCrossover + 1, 1 << 30}
	shapes := batchShapes()
	for _, x := range crossovers {
		// One batch per crossover, reused across shapes: Reset must leave nothing behind.
		b := &Batch{Crossover: x}
		for _, s := range shapes {
			t.Run(fmt.Sprintf("crossover=%d/%s", x, s.name), func(t *testing.T) {
				applyOps(b, s.ops)
				m := modelOps(s.ops, b.crossover())
				checkBatch(t, b, m)
				checkBatch(t, b, m) // Bytes does not consume the batch
				b.Reset()
				if b.Len() != 0 || b.Segments() != 0 || len(b.Bytes()) != 0 {
					t.Fatalf("after Reset: Len %d, Segments %d, %d slices", b.Len(), b.Segments(), len(b.Bytes()))
				}
			})
		}
	}
}

func TestBatchCrossoverBoundary(t *testing.T) {
	for _, x := range []int{0, 64, 4096} {
		b := &Batch{Crossover: x}
		cx := b.crossover()
		for _, tc := range []struct {
			n   int
			ref bool
		}{{cx - 1, false}, {cx, true}, {cx + 1, true}} {
			frame := patterned(tc.n, 1)
			b.Add(frame)
			iov := b.Bytes()
			aliased := unsafe.SliceData(iov[0]) == unsafe.SliceData(frame)
			if aliased != tc.ref {
				t.Errorf("crossover %d: frame of %d bytes referenced = %v, want %v", cx, tc.n, aliased, tc.ref)
			}
			b.Reset()
		}
	}
}

func TestBatchCopiedFramesCoalesce(t *testing.T) {
	var b Batch
	for i := 0; i < 50; i++ {
		b.Add(patterned(10, uint64(i)))
	}
	if b.Segments() != 1 {
		t.Fatalf("50 small frames make %d segments, want 1", b.Segments())
	}
	big := patterned(2*DefaultCrossover, 99)
	b.Add(big)
	b.Copy([]byte("x"))
	b.Copy([]byte("y"))
	if got := b.Segments(); got != 3 {
		t.Fatalf("copies, a referenced frame, copies: %d segments, want 3", got)
	}
	// A copy is a copy: changing the source afterwards changes nothing.
	src := []byte("abc")
	b.Copy(src)
	src[0] = 'Z'
	if got := b.Bytes(); !bytes.HasSuffix(got[len(got)-1], []byte("xyabc")) {
		t.Fatalf("copied bytes changed with their source: %q", got[len(got)-1])
	}
}

func TestBatchReserve(t *testing.T) {
	var b Batch
	if p := b.Reserve(0); len(p) != 0 || b.Segments() != 0 {
		t.Fatalf("Reserve(0) returned %d bytes and made %d segments", len(p), b.Segments())
	}
	copy(b.Reserve(4), "head")
	b.Ref(patterned(1000, 1))
	p := b.Reserve(5)
	if len(p) != 5 {
		t.Fatalf("Reserve(5) returned %d bytes", len(p))
	}
	copy(p, "tail!")
	b.Copy([]byte("+more"))
	iov := b.Bytes()
	if len(iov) != 3 || string(iov[0]) != "head" || string(iov[2]) != "tail!+more" {
		t.Fatalf("got %d slices: first %q, last %q", len(iov), iov[0], iov[len(iov)-1])
	}
	// Reserved space survives the buffer growing under it.
	b.Reset()
	copy(b.Reserve(3), "abc")
	for i := 0; i < 100; i++ {
		b.Copy(patterned(1000, uint64(i)))
	}
	if got := b.Bytes()[0][:3]; string(got) != "abc" {
		t.Fatalf("reserved bytes became %q after the buffer grew", got)
	}
	// Reserved bytes start zeroed: nothing of an earlier batch shows through.
	b.Reset()
	if p := b.Reserve(50000); !bytes.Equal(p, make([]byte, 50000)) {
		t.Fatal("Reserve returned bytes left over from an earlier batch")
	}
}

func TestBatchResetKeepsCapacity(t *testing.T) {
	var b Batch
	for i := 0; i < 200; i++ {
		b.Add(patterned(100+i*20, uint64(i)))
	}
	_ = b.Bytes()
	bufCap, segCap, iovCap := cap(b.buf), cap(b.segs), cap(b.iov)
	if bufCap == 0 || segCap == 0 || iovCap == 0 {
		t.Fatalf("nothing allocated: buf %d, segs %d, iov %d", bufCap, segCap, iovCap)
	}
	b.Reset()
	if cap(b.buf) != bufCap || cap(b.segs) != segCap || cap(b.iov) != iovCap {
		t.Fatalf("Reset changed capacity: buf %d->%d, segs %d->%d, iov %d->%d",
			bufCap, cap(b.buf), segCap, cap(b.segs), iovCap, cap(b.iov))
	}
	if b.Len() != 0 || b.Segments() != 0 || len(b.Bytes()) != 0 {
		t.Fatalf("after Reset: Len %d, Segments %d", b.Len(), b.Segments())
	}
	// Reset must not keep the frames it referenced alive.
	for i, s := range b.segs[:segCap] {
		if s.ref != nil {
			t.Fatalf("segment %d still references a frame after Reset", i)
		}
	}
	for i, p := range b.iov[:iovCap] {
		if p != nil {
			t.Fatalf("slice %d of the last Bytes still references memory after Reset", i)
		}
	}
}

// TestBatchOversizedFallsBackToOneSlice: past MaxIovecs slices the batch is
// copied whole, and the bytes are the same.
func TestBatchOversizedFallsBackToOneSlice(t *testing.T) {
	const x = 64
	frames := make([][]byte, MaxIovecs+5)
	for i := range frames {
		frames[i] = patterned(x+i%7, uint64(i))
	}
	b := Batch{Crossover: x}
	applyOps(&b, adds(frames...))
	if b.Segments() != 1 {
		t.Fatalf("a batch of %d referenced frames reports %d segments, want 1 (the copy fallback)", len(frames), b.Segments())
	}
	iov := b.Bytes()
	if len(iov) != 1 {
		t.Fatalf("Bytes() gave %d slices past MaxIovecs, want 1", len(iov))
	}
	want := bytes.Join(frames, nil)
	if !bytes.Equal(iov[0], want) {
		t.Fatalf("fallback bytes differ at %d", firstDiff(iov[0], want))
	}
	if !within(iov[0], b.buf[:cap(b.buf)]) {
		t.Fatal("fallback slice is not the batch's own copy")
	}
	// The batch stays usable after the fallback.
	tail := patterned(3*x, 77)
	b.Add([]byte("x"))
	b.Add(tail)
	iov = b.Bytes()
	if len(iov) != 2 || !bytes.Equal(bytes.Join(iov, nil), append(append(want, 'x'), tail...)) {
		t.Fatalf("after the fallback, adding frames gave %d slices or wrong bytes", len(iov))
	}

	// Exactly MaxIovecs slices is not oversized.
	b.Reset()
	applyOps(&b, adds(frames[:MaxIovecs]...))
	if n := len(b.Bytes()); n != MaxIovecs {
		t.Fatalf("%d referenced frames gave %d slices, want %d", MaxIovecs, n, MaxIovecs)
	}
}

// TestBatchNormalBatchIsNotConsolidated guards against silent consolidation:
// a normal batch of large frames must reach the kernel as one iovec per frame.
func TestBatchNormalBatchIsNotConsolidated(t *testing.T) {
	const events = 64
	payloads := make([][]byte, events)
	for i := range payloads {
		payloads[i] = patterned(4*DefaultCrossover, uint64(i))
	}
	prefix, suffix := []byte("data: "), []byte("\n\n")
	for _, tc := range []struct {
		name      string
		crossover int
		delimited bool
		want      int
	}{
		{"bare", 0, false, events},
		{"delimited, all referenced", 1, true, 3 * events},
		{"delimited, delimiters copied", 0, true, 2*events + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Batch{Crossover: tc.crossover}
			var want []byte
			for _, p := range payloads {
				if tc.delimited {
					b.Add(prefix)
					want = append(want, prefix...)
				}
				b.Add(p)
				want = append(want, p...)
				if tc.delimited {
					b.Add(suffix)
					want = append(want, suffix...)
				}
			}
			iov := b.Bytes()
			if len(iov) != tc.want {
				t.Fatalf("%d events gave %d iovecs, want %d", events, len(iov), tc.want)
			}
			aliased := 0
			for _, p := range iov {
				for _, q := range payloads {
					if unsafe.SliceData(p) == unsafe.SliceData(q) {
						aliased++
					}
				}
			}
			if aliased != events {
				t.Fatalf("%d of %d payloads reach the kernel by reference", aliased, events)
			}
			if !bytes.Equal(bytes.Join(iov, nil), want) {
				t.Fatal("bytes differ from the concatenation")
			}
		})
	}
}

func TestBatchAllocations(t *testing.T) {
	small := patterned(40, 1)
	large := patterned(4*DefaultCrossover, 2)
	var b Batch
	run := func() {
		for i := 0; i < 30; i++ {
			b.Add(small)
			b.Add(large)
			copy(b.Reserve(8), "reserved")
		}
		if len(b.Bytes()) != 61 { // 30 referenced frames between 31 runs of copies
			panic("unexpected shape")
		}
		b.Reset()
	}
	run() // warm up: the batch grows its buffers once
	if a := testing.AllocsPerRun(100, run); a != 0 {
		t.Fatalf("Add/Reserve/Bytes/Reset allocate %.1f times per batch once warmed up, want 0", a)
	}
	oversized := func() {
		for i := 0; i < MaxIovecs+10; i++ {
			b.Ref(small)
		}
		if len(b.Bytes()) != 1 {
			panic("no fallback")
		}
		b.Reset()
	}
	oversized()
	if a := testing.AllocsPerRun(20, oversized); a != 0 {
		t.Fatalf("the oversized fallback allocates %.1f times per batch once warmed up, want 0", a)
	}
}

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
			size = rng.IntN(2 * DefaultCrossover)
		}
		frames[i] = patterned(size, rng.Uint64())
		want = append(want, frames[i]...)
	}
	return frames, want
}

// writeFrames adds frames to the loop's batch, writes it to c and scribbles
// over the frames, which the caller may do once WriteTo returns.
func writeFrames(c *Conn, frames [][]byte) (segments, queued int, err error) {
	b := c.Loop().Batch()
	for _, f := range frames {
		b.Add(f)
	}
	segments = len(b.segs)
	err = b.WriteTo(c)
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
	for i := 0; i < MaxIovecs/2+20; i++ {
		many = append(many, patterned(7, uint64(i)), patterned(DefaultCrossover+i%100, uint64(i)+1<<32))
		manyWant = append(append(manyWant, many[2*i]...), many[2*i+1]...)
	}
	for _, tc := range []struct {
		name   string
		frames [][]byte
		want   []byte
		minSeg int
		maxSeg int
	}{
		{"mixed", mixed, mixedWant, 2, MaxIovecs},
		{"past MaxIovecs", many, manyWant, MaxIovecs + 1, 1 << 30},
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
				t.Fatalf("client got %d bytes, want %d identical bytes (first difference at %d)", len(got), len(tc.want), firstDiff(got, tc.want))
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
		big = append(big, patterned(1+i%50, uint64(i)), patterned(7000+i, uint64(i)+1<<32))
	}
	add(big)
	f, _ := mixedFrames(300, 2)
	add(f)
	var many [][]byte
	for i := 0; i < MaxIovecs/2+20; i++ {
		many = append(many, patterned(3, uint64(i)), patterned(DefaultCrossover, uint64(i)+1<<33))
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
	if ws[0].queued == 0 || ws[0].segments < 2 || ws[0].segments > MaxIovecs {
		t.Fatalf("first batch: %d segments, %d bytes queued: the kernel took it whole, so the partial-write path was not tested",
			ws[0].segments, ws[0].queued)
	}
	if ws[2].segments <= MaxIovecs {
		t.Fatalf("third batch has %d segments, want more than %d", ws[2].segments, MaxIovecs)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("client got %d bytes, want %d identical bytes (first difference at %d)", len(got), len(want), firstDiff(got, want))
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
			if err := b.WriteTo(c); err != nil && failure == nil {
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
