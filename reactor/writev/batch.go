// Package writev gathers the bytes produced for one connection into one
// vectored write: a Batch copies short frames next to each other and
// references long ones, and Scratch makes the writev call from a reused
// iovec array, so that the hot path does not allocate.
package writev

import "slices"

// MaxIovecs is the most slices one vectored write takes (IOV_MAX on Linux and the BSDs).
const MaxIovecs = 1024

// DefaultCrossover is the frame size from which Batch passes a frame to the
// kernel as its own iovec instead of copying it. Measured by
// BenchmarkBatchCrossover (benchmarks/results/2026-11-30-batch-crossover.md):
// referencing beats copying from about 2.5 KiB bare and 3 KiB between small
// copied delimiters.
const DefaultCrossover = 3072

// Batch collects the bytes produced for one connection while one read is
// handled, and writes them with one vectored write. Frames shorter than the
// crossover are copied into the batch's own buffer, next to each other;
// longer ones are referenced, not copied, so they must stay valid until the
// batch is written (slices from Peek do, as long as Discard comes after).
// A batch past MaxIovecs slices is copied whole and written as one slice.
//
// A Batch is reused: Reset (and a reactor.Conn.WriteBatch) empties it and
// keeps its memory.
type Batch struct {
	// Crossover overrides DefaultCrossover when positive; 1 references every
	// frame, a huge value copies every frame.
	Crossover int

	segs []segment
	buf  []byte
	iov  [][]byte
	n    int
}

// segment is one run of the batch: a referenced slice, or buf[off:end].
type segment struct {
	ref      []byte
	off, end int
}

func (b *Batch) crossover() int {
	if b.Crossover > 0 {
		return b.Crossover
	}
	return DefaultCrossover
}

// Len returns the number of bytes in the batch.
func (b *Batch) Len() int { return b.n }

// Segments returns the number of slices the batch would be written as.
func (b *Batch) Segments() int {
	if len(b.segs) > MaxIovecs {
		return 1 // Bytes copies it whole
	}
	return len(b.segs)
}

// Add appends p, copying it when it is shorter than the crossover.
func (b *Batch) Add(p []byte) {
	if len(p) < b.crossover() {
		b.Copy(p)
		return
	}
	b.Ref(p)
}

// Ref appends p without copying it.
func (b *Batch) Ref(p []byte) {
	if len(p) == 0 {
		return
	}
	b.segs = append(b.segs, segment{ref: p})
	b.n += len(p)
}

// Copy appends a copy of p.
func (b *Batch) Copy(p []byte) {
	if len(p) == 0 {
		return
	}
	off := len(b.buf)
	b.buf = append(b.buf, p...)
	b.own(off, len(p))
}

// Reserve appends n zeroed bytes to the batch's own buffer and returns them
// to be filled in; the slice is valid until the next call on b.
func (b *Batch) Reserve(n int) []byte {
	if n == 0 {
		return nil
	}
	off := len(b.buf)
	b.buf = slices.Grow(b.buf, n)[:off+n]
	p := b.buf[off:]
	clear(p) // no bytes of an earlier batch leak through
	b.own(off, n)
	return p
}

// own counts buf[off:off+n] as the batch's next bytes, extending the last
// segment when it ends at off.
func (b *Batch) own(off, n int) {
	if k := len(b.segs) - 1; k >= 0 && b.segs[k].ref == nil && b.segs[k].end == off {
		b.segs[k].end += n
	} else {
		b.segs = append(b.segs, segment{off: off, end: off + n})
	}
	b.n += n
}

// Reset empties the batch without writing it.
func (b *Batch) Reset() {
	clear(b.segs) // drop references to frames
	b.segs = b.segs[:0]
	clear(b.iov) // and the slices the last Bytes returned
	b.iov = b.iov[:0]
	b.buf = b.buf[:0]
	if cap(b.buf) > maxRetainedBuffer {
		b.buf = nil // one huge batch must not pin its memory on the loop
	}
	b.n = 0
}

// maxRetainedBuffer is the largest copy buffer Reset keeps for reuse.
const maxRetainedBuffer = 4 << 20

// Bytes returns the batch as slices, in order, without writing it. The
// result is valid until the next call on b.
func (b *Batch) Bytes() [][]byte {
	if len(b.segs) > MaxIovecs {
		b.flatten()
	}
	b.iov = b.iov[:0]
	for _, s := range b.segs {
		if s.ref != nil {
			b.iov = append(b.iov, s.ref)
		} else {
			b.iov = append(b.iov, b.buf[s.off:s.end])
		}
	}
	return b.iov
}

// flatten copies every segment, in order, into one run of buf.
func (b *Batch) flatten() {
	start := len(b.buf)
	for _, s := range b.segs {
		if s.ref != nil {
			b.buf = append(b.buf, s.ref...)
		} else {
			b.buf = append(b.buf, b.buf[s.off:s.end]...)
		}
	}
	clear(b.segs)
	b.segs = append(b.segs[:0], segment{off: start, end: len(b.buf)})
}
