package reactor

import (
	"net"
	"time"

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
