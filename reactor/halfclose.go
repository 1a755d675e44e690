package reactor

import (
	"errors"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// HalfCloseHandler is a Handler that relays half-closes. gnet treats a read
// of 0 bytes (the peer's FIN) as the end of the connection; for a handler
// with this method the reactor keeps the socket open for writing instead:
// OnReadEOF runs in place of OnClose, and the connection stays open, with no
// more input, until the handler closes it.
//
// gnet closes its descriptor after it reports the EOF, and writes what it
// still has queued once before that, dropping the rest. So for these
// connections the reactor keeps a copy of the output gnet has queued (which
// doubles the memory of a backed-up connection's queue, bounded by the high
// watermark), duplicates the descriptor before gnet closes it, points gnet's
// descriptor at /dev/null so that gnet's last write cannot send part of the
// queue, and from then on writes to the socket itself: at once, and for what
// the kernel does not take, from the loop's drain poll.
type HalfCloseHandler interface {
	Handler
	// OnReadEOF runs when the peer has shut down its write side. The
	// connection's unread input can still be read with Peek during the
	// call and is gone after it. Write, CloseWrite and Close work as before.
	OnReadEOF(c *Conn)
}

// tail is the write side of a connection whose peer has half-closed: the
// socket, now outside gnet, and what the kernel has not taken yet.
type tail struct {
	fd            int
	buf           []byte
	local, remote net.Addr
	err           error // the write error that broke it
}

// shadowKeep is how much spare capacity a connection's copy of its queued
// output keeps once the queue is empty.
const shadowKeep = 64 << 10

// recordQueued keeps, for a half-close handler's connection, a copy of the
// output gnet has queued after a write of ps: the last `queued` bytes written.
func (c *Conn) recordQueued(before, queued int, ps ...[]byte) {
	if queued == 0 {
		if cap(c.shadow) > shadowKeep {
			c.shadow = nil
		} else {
			c.shadow = c.shadow[:0]
		}
		return
	}
	if before == 0 {
		c.shadow = c.shadow[:0]
	}
	for _, p := range ps {
		c.shadow = append(c.shadow, p...)
	}
	if n := len(c.shadow) - queued; n > 0 {
		// Keep only the queued suffix; move it to the front when the dead
		// prefix is the larger part, so the slice does not creep.
		if n > queued {
			c.shadow = c.shadow[:copy(c.shadow, c.shadow[n:])]
		} else {
			c.shadow = c.shadow[n:]
		}
	}
}

// trimShadow drops the part of the copy gnet has sent since: it keeps the
// last queued bytes.
func (c *Conn) trimShadow(queued int) {
	switch {
	case queued == 0:
		if cap(c.shadow) > shadowKeep {
			c.shadow = nil
		} else {
			c.shadow = c.shadow[:0]
		}
	case len(c.shadow) > queued:
		c.shadow = c.shadow[len(c.shadow)-queued:]
		if cap(c.shadow) > 2*queued+shadowKeep {
			// Most of the array is sent: let it go.
			c.shadow = append([]byte(nil), c.shadow...)
		}
	}
}

var devNull struct {
	once sync.Once
	fd   int
	err  error
}

// devNullFD returns a descriptor of /dev/null opened once for the process.
func devNullFD() (int, error) {
	devNull.once.Do(func() {
		devNull.fd, devNull.err = unix.Open(os.DevNull, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	})
	return devNull.fd, devNull.err
}

// becomeTail takes c's socket out of gnet after gnet read its peer's EOF
// (inside gnet's OnClose, while the descriptor is still open), so that c
// stays writable. It reports false, leaving c to close as usual, when that
// is not possible.
func (l *Loop) becomeTail(c *Conn) bool {
	gc := c.gc
	queued := gc.OutboundBuffered()
	if len(c.shadow) < queued {
		l.srv.log.Error().Int("queued", queued).Int("copied", len(c.shadow)).
			Msg("half-close: the copy of the queued output is short; closing instead")
		return false
	}
	fd := gc.Fd()
	// The drain watcher's registration is keyed by gnet's descriptor, which
	// is about to close or point at /dev/null: it moves to the copy.
	waiting := c.waitIdx != 0
	l.unwatch(c)
	nfd, err := unix.Dup(fd)
	if err != nil {
		l.srv.log.Warn().Err(err).Msg("half-close: cannot keep the socket (dup); closing instead")
		return false
	}
	unix.CloseOnExec(nfd)
	l.forgetFD(fd)
	if queued > 0 {
		// gnet writes its queue once more before it closes fd: let that go
		// to /dev/null, since every queued byte is sent from the copy.
		null, err := devNullFD()
		if err == nil {
			err = dupOnto(null, fd)
		}
		if err != nil {
			_ = unix.Close(nfd)
			l.srv.log.Error().Err(err).Msg("half-close: cannot detach gnet's descriptor; closing instead")
			return false
		}
	}
	t := &tail{fd: nfd, local: gc.LocalAddr(), remote: gc.RemoteAddr()}
	t.buf = append(t.buf, c.shadow[len(c.shadow)-queued:]...)
	c.shadow = nil
	if c.pause.flowControl() {
		l.stats.Paused.Add(-1)
	}
	c.pause = 0 // nothing is read from a tail
	c.tail = t
	c.gc = nil
	l.stats.HalfClosed.Add(1)
	l.stats.HalfCloseKept.Add(int64(queued))
	if len(t.buf) > 0 {
		l.flushTail(c)
	}
	if waiting && c.state&(stateCloseQueued|stateClosed) == 0 {
		l.watch(c)
	}
	return true
}

// tailWrite writes ps to c's tail: at once if nothing waits before them.
func (l *Loop) tailWrite(c *Conn, ps ...[]byte) error {
	t := c.tail
	if t.err != nil {
		return t.err
	}
	for _, p := range ps {
		if len(t.buf) > 0 {
			t.buf = append(t.buf, p...)
			continue
		}
		n, err := unix.Write(t.fd, p)
		if n < 0 {
			n = 0
		}
		if err != nil && !errors.Is(err, unix.EAGAIN) {
			l.breakTail(c, err)
			return t.err
		}
		t.buf = append(t.buf, p[n:]...)
	}
	if len(t.buf) > 0 {
		l.watch(c)
	}
	l.account(c)
	return nil
}

// flushTail writes what c's tail has queued, as far as the kernel takes it.
func (l *Loop) flushTail(c *Conn) {
	t := c.tail
	for len(t.buf) > 0 && t.err == nil {
		n, err := unix.Write(t.fd, t.buf)
		if n > 0 {
			t.buf = t.buf[n:]
		}
		if err != nil {
			if !errors.Is(err, unix.EAGAIN) {
				l.breakTail(c, err)
			}
			break
		}
	}
	if len(t.buf) == 0 {
		t.buf = nil
	} else {
		l.watch(c)
	}
	l.account(c)
}

// breakTail records a write error on c's tail: the peer is gone, so the
// connection closes with that error.
func (l *Loop) breakTail(c *Conn, err error) {
	c.tail.err = err
	c.tail.buf = nil
	c.closeErr = err
	c.state |= stateClosing
	c.closeNow()
}

// closeTail closes c's socket; the handler's OnClose follows at the end of
// the callback, as it does for a connection gnet closes.
func (l *Loop) closeTail(c *Conn) {
	c.state |= stateCloseQueued
	l.closed = append(l.closed, c)
}

// finishTails closes the tails queued by closeTail.
// Output still queued then is dropped (the linger expired or the close
// was an Abort): the peer gets a reset, not a FIN it would take for the end.
func (l *Loop) finishTails() {
	for i := 0; i < len(l.closed); i++ { // OnClose may queue more
		c := l.closed[i]
		l.closed[i] = nil
		l.unwatch(c) // before its descriptor closes and its number is reused
		if len(c.tail.buf) > 0 {
			_ = unix.SetsockoptLinger(c.tail.fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
		}
		_ = unix.Close(c.tail.fd)
		c.tail.buf = nil
		l.finishClose(c, c.closeErr)
	}
	l.closed = l.closed[:0]
}

// closeTails closes, on each loop, the half-closed connections gnet no
// longer knows, as gnet's stop closes its own: output still queued gets one
// write. It waits at most a second for the loops.
func (s *Server) closeTails() {
	done := make(chan struct{}, len(s.Loops()))
	n := 0
	for _, l := range s.Loops() {
		if l.Execute(func() {
			for _, c := range append([]*Conn(nil), l.conns...) {
				if c.tail != nil && c.state&(stateCloseQueued|stateClosed) == 0 {
					c.Abort()
				}
			}
			done <- struct{}{}
		}) == nil {
			n++
		}
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for ; n > 0; n-- {
		select {
		case <-done:
		case <-t.C:
			return
		}
	}
}

// maxRest bounds what readRest takes from a closing socket: more than any
// kernel receive buffer holds.
const maxRest = 64 << 20

// readRest gathers a paused connection's unread input, gnet's and the
// kernel's, before gnet closes it, so that the handler can still Peek it.
func (l *Loop) readRest(c *Conn, gc gnet.Conn) {
	in, _ := gc.Peek(-1)
	rest := append([]byte(nil), in...)
	_, _ = gc.Discard(-1)
	fd := gc.Fd()
	for len(rest) < maxRest {
		rest = slices.Grow(rest, 64<<10)
		n, err := unix.Read(fd, rest[len(rest):cap(rest)])
		if n <= 0 || err != nil {
			break
		}
		rest = rest[:len(rest)+n]
	}
	c.eofRest = rest
}

// CloseWrite shuts down c's write side (a FIN to the peer) once its queued
// output has drained; reading goes on. It is how a half-close is relayed.
func (c *Conn) CloseWrite() {
	if c.Closing() || c.state&stateWriteShut != 0 {
		return
	}
	c.state |= stateWantShutWrite
	if c.gc == nil && c.tail == nil { // dial pending: done once it opens
		return
	}
	if c.OutboundBuffered() == 0 {
		c.shutWrite()
		return
	}
	c.loop.watch(c)
}

func (c *Conn) shutWrite() {
	c.state = c.state&^stateWantShutWrite | stateWriteShut
	fd := -1
	switch {
	case c.tail != nil:
		fd = c.tail.fd
	case c.gc != nil:
		fd = c.gc.Fd()
	}
	if fd >= 0 {
		_ = unix.Shutdown(fd, unix.SHUT_WR)
	}
}

// sockFD is c's socket: its tail's once gnet has let it go.
func (c *Conn) sockFD() int {
	if c.tail != nil {
		return c.tail.fd
	}
	return c.gc.Fd()
}

// ReadClosed reports whether the peer has shut down its write side.
func (c *Conn) ReadClosed() bool { return c.tail != nil }
