package reactor

import (
	"errors"

	"github.com/tidegate/tidegate/reactor/writev"

	"golang.org/x/sys/unix"
)

// Output that a handler relaying half-closes writes is queued by the
// reactor, not by gnet: gnet drops its queue when it reads the peer's FIN
// (it closes the descriptor after one last write), and gnet's queue cannot
// be read back, so the reactor would otherwise have to keep a second copy
// of everything gnet holds. Owning the queue also bounds its memory by what
// it holds rather than by what it once held: it is a list of fixed-size
// chunks from a shared pool (package chunkqueue), each returned once sent,
// where gnet's buffers keep their grown capacity. The socket's writability
// comes from the loop's drain watcher (drain.go).

// queueWrite writes ps to c's socket itself, at once if nothing is queued
// before them, and queues what the kernel does not take.
func (l *Loop) queueWrite(c *Conn, ps ...[]byte) error {
	if c.queued() == 0 {
		n, err := l.iovecs.Write(c.sockFD(), ps)
		if err != nil && !errors.Is(err, unix.EAGAIN) {
			l.breakWrite(c, err)
			return err
		}
		for _, p := range ps {
			if n >= len(p) {
				n -= len(p)
				continue
			}
			c.more().out.Push(p[n:])
			n = 0
		}
	} else {
		for _, p := range ps {
			c.aux.out.Push(p)
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
		bufs := q.AppendBufs(l.bufs[:0], writev.MaxIovecs)
		n, err := l.iovecs.Write(fd, bufs)
		clear(bufs)
		l.bufs = bufs[:0]
		if n > 0 {
			q.Consume(n)
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
