package writev

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"unsafe"

	"github.com/tidegate/tidegate/internal/testkit/testbytes"
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
		fs[i] = testbytes.Patterned(n, uint64(i)+1)
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
		{"empty, frame, empty", adds(nil, testbytes.Patterned(100, 7), []byte{})},
		{"zero-length payloads between frames", adds(sized(0, 40, 0, 0, 2*x, 0, 40, 0)...)},
		{"just below crossover", adds(sized(x-1, x-1, x-1)...)},
		{"at crossover", adds(sized(x, x, x)...)},
		{"just above crossover", adds(sized(x+1, x+1, x+1)...)},
		{"below, at, above, below", adds(sized(x-1, x, x+1, x-1, x-1, 1)...)},
		{"all kinds", []batchOp{
			{opCopy, testbytes.Patterned(5000, 1)}, {opRef, testbytes.Patterned(3, 2)}, {opReserve, testbytes.Patterned(17, 3)},
			{opReserve, testbytes.Patterned(0, 4)}, {opAdd, testbytes.Patterned(9, 5)}, {opRef, []byte{}},
			{opCopy, nil}, {opReserve, testbytes.Patterned(1, 6)}, {opRef, testbytes.Patterned(70, 7)},
		}},
		{"reserve coalesces with copies", []batchOp{
			{opCopy, testbytes.Patterned(6, 1)}, {opReserve, testbytes.Patterned(100, 2)}, {opCopy, testbytes.Patterned(2, 3)},
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
			ops[j] = batchOp{kind: batchOpKind(rng.IntN(4)), data: testbytes.Patterned(n, rng.Uint64())}
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
			len(got), len(m.want), testbytes.FirstDiff(got, m.want))
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
			frame := testbytes.Patterned(tc.n, 1)
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
		b.Add(testbytes.Patterned(10, uint64(i)))
	}
	if b.Segments() != 1 {
		t.Fatalf("50 small frames make %d segments, want 1", b.Segments())
	}
	big := testbytes.Patterned(2*DefaultCrossover, 99)
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
	b.Ref(testbytes.Patterned(1000, 1))
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
		b.Copy(testbytes.Patterned(1000, uint64(i)))
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
		b.Add(testbytes.Patterned(100+i*20, uint64(i)))
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
		frames[i] = testbytes.Patterned(x+i%7, uint64(i))
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
		t.Fatalf("fallback bytes differ at %d", testbytes.FirstDiff(iov[0], want))
	}
	if !within(iov[0], b.buf[:cap(b.buf)]) {
		t.Fatal("fallback slice is not the batch's own copy")
	}
	// The batch stays usable after the fallback.
	tail := testbytes.Patterned(3*x, 77)
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
		payloads[i] = testbytes.Patterned(4*DefaultCrossover, uint64(i))
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
	small := testbytes.Patterned(40, 1)
	large := testbytes.Patterned(4*DefaultCrossover, 2)
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
