package reactor

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// Output that a handler relaying half-closes writes is queued by the
// reactor, not by gnet: gnet drops its queue when it reads the peer's FIN
// (it closes the descriptor after one last write), and gnet's queue cannot
// be read back, so the reactor would otherwise have to keep a second copy
// of everything gnet holds. Owning the queue also bounds its memory by what
// it holds rather than by what it once held: it is a list of fixed-size
// chunks from a shared pool, each returned once sent, where gnet's buffers
// keep their grown capacity. The socket's writability comes from the
// loop's drain watcher (drain.go).

// outChunkSize is the size of one chunk of a connection's queued output.
// A connection with anything queued holds at least one.
const outChunkSize = 16 << 10

type outChunk = [outChunkSize]byte

var outChunks = sync.Pool{New: func() any { return new(outChunk) }}

// outQueue is a FIFO of bytes in pooled chunks.
type outQueue struct {
	chunks []*outChunk
	head   int // first unsent byte in chunks[0]
	tail   int // end of the bytes in the last chunk
	n      int // bytes queued
}

// Len returns the number of bytes queued.
func (q *outQueue) Len() int { return q.n }

// held returns the memory the queue holds.
func (q *outQueue) held() int { return len(q.chunks) * outChunkSize }

// push appends a copy of p.
func (q *outQueue) push(p []byte) {
	for len(p) > 0 {
		if len(q.chunks) == 0 || q.tail == outChunkSize {
			q.chunks = append(q.chunks, outChunks.Get().(*outChunk))
			q.tail = 0
		}
		k := copy(q.chunks[len(q.chunks)-1][q.tail:], p)
		q.tail += k
		q.n += k
		p = p[k:]
	}
}

// appendBufs appends to dst, up to max slices in all, the queued bytes in order.
func (q *outQueue) appendBufs(dst [][]byte, max int) [][]byte {
	last := len(q.chunks) - 1
	for i, c := range q.chunks {
		if len(dst) >= max {
			break
		}
		lo, hi := 0, outChunkSize
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

// consume drops the first n bytes, which have been sent; a chunk goes back
// to the pool as soon as it is empty.
func (q *outQueue) consume(n int) {
	q.n -= n
	for n > 0 {
		end := outChunkSize
		if len(q.chunks) == 1 {
			end = q.tail
		}
		if avail := end - q.head; n < avail {
			q.head += n
			return
		} else {
			n -= avail
		}
		outChunks.Put(q.chunks[0])
		q.chunks[0] = nil
		q.chunks = q.chunks[:copy(q.chunks, q.chunks[1:])]
		q.head = 0
	}
	if q.n == 0 {
		q.release()
	}
}

// release drops everything queued and returns the chunks to the pool.
func (q *outQueue) release() {
	for i, c := range q.chunks {
		outChunks.Put(c)
		q.chunks[i] = nil
	}
	if cap(q.chunks) > 64 {
		q.chunks = nil
	} else {
		q.chunks = q.chunks[:0]
	}
	q.head, q.tail, q.n = 0, 0, 0
}

// queueWrite writes ps to c's socket itself, at once if nothing is queued
// before them, and queues what the kernel does not take.
func (l *Loop) queueWrite(c *Conn, ps ...[]byte) error {
	if c.queued() == 0 {
		n, err := l.writeBufs(c.sockFD(), ps)
		if err != nil && !errors.Is(err, unix.EAGAIN) {
			l.breakWrite(c, err)
			return err
		}
		for _, p := range ps {
			if n >= len(p) {
				n -= len(p)
				continue
			}
			c.more().out.push(p[n:])
			n = 0
		}
	} else {
		for _, p := range ps {
			c.aux.out.push(p)
		}
	}
	if c.queued() > 0 {
		l.watch(c)
	}
	l.account(c)
	return nil
}

// flushQueue writes what c has queued, as far as the kernel takes it.
func (l *Loop) flushQueue(c *Conn) {
	fd := c.sockFD()
	for c.queued() > 0 {
		q := &c.aux.out
		bufs := q.appendBufs(l.bufs[:0], MaxIovecs)
		n, err := l.writeBufs(fd, bufs)
		clear(bufs)
		l.bufs = bufs[:0]
		if n > 0 {
			q.consume(n)
		}
		if err != nil {
			if !errors.Is(err, unix.EAGAIN) {
				l.breakWrite(c, err)
				return
			}
			break
		}
		if n == 0 {
			break
		}
	}
	if c.queued() > 0 {
		l.watch(c)
	}
	l.account(c)
	c.tidy() // a drained queue leaves nothing behind
}

// breakWrite records a write error on c: the peer is gone, so the
// connection closes with that error and its queued output is dropped.
func (l *Loop) breakWrite(c *Conn, err error) {
	c.releaseQueue()
	c.more().closeErr = err
	c.state |= stateClosing
	c.closeNow()
}
