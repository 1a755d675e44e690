// Package chunkqueue is a FIFO of bytes in fixed-size chunks from a pool
// shared by the process, for output the kernel has not taken yet. Its
// memory follows what it holds rather than what it once held: each chunk
// goes back to the pool once it is sent, where a growing buffer keeps its
// grown capacity.
package chunkqueue

import "sync"

// ChunkSize is the size of one chunk. A queue with anything in it holds at
// least one.
const ChunkSize = 16 << 10

type chunk = [ChunkSize]byte

// chunks is the pool shared by every queue in the process.
var chunks = sync.Pool{New: func() any { return new(chunk) }}

// Queue is a FIFO of bytes in pooled chunks. Its zero value is empty. It is
// not safe for concurrent use.
type Queue struct {
	chunks []*chunk
	head   int // first unsent byte in chunks[0]
	tail   int // end of the bytes in the last chunk
	n      int // bytes queued
}

// Len returns the number of bytes queued.
func (q *Queue) Len() int { return q.n }

// Held returns the memory the queue holds: whole chunks.
func (q *Queue) Held() int { return len(q.chunks) * ChunkSize }

// Push appends a copy of p.
func (q *Queue) Push(p []byte) {
	for len(p) > 0 {
		if len(q.chunks) == 0 || q.tail == ChunkSize {
			q.chunks = append(q.chunks, chunks.Get().(*chunk))
			q.tail = 0
		}
		k := copy(q.chunks[len(q.chunks)-1][q.tail:], p)
		q.tail += k
		q.n += k
		p = p[k:]
	}
}

// AppendBufs appends to dst, up to max slices in all, the queued bytes in order.
func (q *Queue) AppendBufs(dst [][]byte, max int) [][]byte {
	last := len(q.chunks) - 1
	for i, c := range q.chunks {
		if len(dst) >= max {
			break
		}
		lo, hi := 0, ChunkSize
		if i == 0 {
			lo = q.head
		}
		if i == last {
			hi = q.tail
		}
		if hi > lo {
			dst = append(dst, c[lo:hi])
		}
	}
	return dst
}

// Consume drops the first n bytes, which have been sent; a chunk goes back
// to the pool as soon as it is empty.
func (q *Queue) Consume(n int) {
	q.n -= n
	for n > 0 {
		end := ChunkSize
		if len(q.chunks) == 1 {
			end = q.tail
		}
		if avail := end - q.head; n < avail {
			q.head += n
			return
		} else {
			n -= avail
		}
		chunks.Put(q.chunks[0])
		q.chunks[0] = nil
		q.chunks = q.chunks[:copy(q.chunks, q.chunks[1:])]
		q.head = 0
	}
	if q.n == 0 {
		q.Release()
	}
}

// Release drops everything queued and returns the chunks to the pool.
func (q *Queue) Release() {
	for i, c := range q.chunks {
		chunks.Put(c)
		q.chunks[i] = nil
	}
	if cap(q.chunks) > 64 {
		q.chunks = nil
	} else {
		q.chunks = q.chunks[:0]
	}
	q.head, q.tail, q.n = 0, 0, 0
}

// Chunks returns the number of chunks the queue holds: AppendBufs with that
// many slices returns everything queued.
func (q *Queue) Chunks() int { return len(q.chunks) }

// Cap returns the chunks the queue's list has room for; an empty queue
// keeps that room for reuse unless it grew past 64.
func (q *Queue) Cap() int { return cap(q.chunks) }
