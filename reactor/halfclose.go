package reactor

import (
	"net"
	"slices"
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
// still has queued once before that, dropping the rest. So the reactor, not
// gnet, queues these connections' output (outqueue.go), duplicates the
// descriptor before gnet closes it, and from then on writes to the socket
// through the copy: gnet's close then sends nothing, and the queue goes on
// draining on the loop's drain watcher.
type HalfCloseHandler interface {
	Handler
	// OnReadEOF runs when the peer has shut down its write side. The
	// connection's unread input can still be read with Peek during the
	// call and is gone after it. Write, CloseWrite and Close work as before.
	OnReadEOF(c *Conn)
}

// tail is the socket of a connection whose peer has half-closed, once
// gnet has let it go. What the kernel has not taken yet stays in the
// connection's own queue (connAux.out).
type tail struct {
	fd            int // -1 once nothing can be written: gnet closed the socket
	local, remote net.Addr
}

// becomeTail takes c's socket out of gnet after gnet read its peer's EOF
// (inside gnet's OnClose, while the descriptor is still open), so that c
// stays writable. It reports false, leaving c to close as usual, when that
// is not possible.
func (l *Loop) becomeTail(c *Conn) bool {
	gc := c.gc
	if n := gc.OutboundBuffered(); n > 0 {
		// The reactor queues this connection's output itself; gnet's queue
		// is empty unless something wrote to gnet directly.
		l.srv.log.Error().Int("queued", n).Msg("half-close: gnet holds queued output it would drop; closing instead")
		return false
	}
	fd := gc.Fd()
	// The drain watcher's registration is keyed by gnet's descriptor, which
	// is about to close: it moves to the copy.
	waiting := c.waitIdx != 0
	nfd := -1
	if c.state&stateWriteShut == 0 || c.queued() > 0 || waiting {
		l.unwatch(c)
		var err error
		if nfd, err = dupCloseOnExec(fd); err != nil {
			l.srv.log.Warn().Err(err).Msg("half-close: cannot keep the socket (dup); closing instead")
			return false
		}
		l.forgetFD(fd)
	}
	// Otherwise our FIN went out before the peer's came and nothing is
	// left to write: the socket is done both ways and goes with gnet's
	// close. The tail without one (fd -1) still runs OnReadEOF and the
	// handler's close, as any other, and saves a dup, an epoll_ctl and a
	// close on the second side of every session that ends in order.
	c.more().tail = &tail{fd: nfd, local: gc.LocalAddr(), remote: gc.RemoteAddr()}
	if c.pause.flowControl() {
		l.stats.Paused.Add(-1)
	}
	c.pause = 0 // nothing is read from a tail
	c.gc = nil
	l.stats.HalfClosed.Add(1)
	l.stats.HalfCloseKept.Add(int64(c.queued()))
	if c.queued() > 0 {
		l.flushQueue(c)
	}
	if waiting && c.state&(stateCloseQueued|stateClosed) == 0 {
		l.watch(c)
	}
	return true
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
		if fd := c.aux.tail.fd; fd >= 0 {
			if c.queued() > 0 {
				_ = unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
			}
			_ = unix.Close(fd)
		}
		c.releaseQueue()
		l.finishClose(c, c.closeErr())
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
				if c.tailSock() != nil && c.state&(stateCloseQueued|stateClosed) == 0 {
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
	c.more().eofRest = rest
}

// CloseWrite shuts down c's write side (a FIN to the peer) once its queued
// output has drained; reading goes on. It is how a half-close is relayed.
func (c *Conn) CloseWrite() {
	if c.Closing() || c.state&stateWriteShut != 0 {
		return
	}
	c.state |= stateWantShutWrite
	if c.gc == nil && c.tailSock() == nil { // dial pending: done once it opens
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
	case c.tailSock() != nil:
		fd = c.aux.tail.fd
	case c.gc != nil:
		fd = c.gc.Fd()
	}
	if fd >= 0 {
		_ = unix.Shutdown(fd, unix.SHUT_WR)
	}
}

// dupCloseOnExec duplicates fd with close-on-exec set, in one system call
// (dup then FD_CLOEXEC is two, on every half-closed connection).
func dupCloseOnExec(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}

// sockFD is c's socket: its tail's once gnet has let it go.
func (c *Conn) sockFD() int {
	if t := c.tailSock(); t != nil {
		return t.fd
	}
	return c.gc.Fd()
}

// ReadClosed reports whether the peer has shut down its write side.
func (c *Conn) ReadClosed() bool { return c.tailSock() != nil }
