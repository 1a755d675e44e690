package reactor

import (
	"errors"
	"net"

	"github.com/tidegate/tidegate/reactor/chunkqueue"
	"github.com/tidegate/tidegate/reactor/looptimer"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// ErrClosed is returned by writes to a connection that has closed or is closing.
var ErrClosed = errors.New("reactor: connection closed")

// Handler receives the events of connections. Every method runs on the loop
// that owns the connection.
type Handler interface {
	// OnOpen runs once the connection is registered on its loop.
	OnOpen(c *Conn)
	// OnTraffic runs when the connection has inbound bytes (Peek, Discard).
	// Bytes left unconsumed stay buffered and are offered again with the next
	// event. It does not run while the connection is paused.
	OnTraffic(c *Conn)
	// OnClose runs once when the connection has closed, or when an outbound
	// connection could not be made; err says why (nil for a local close).
	OnClose(c *Conn, err error)
}

// pauseReason is a bit set of the reasons a connection is not being read.
type pauseReason uint8

const (
	// pauseSinkFull: the connection this one writes into has output past the high watermark.
	pauseSinkFull pauseReason = 1 << iota
	// pausePeerInboundFull: the connection this one writes into is paused and
	// its own unread input has reached the inbound cap.
	pausePeerInboundFull
	// pauseClosing: the connection is closing and its input is no longer wanted.
	pauseClosing
	// pauseUser: the handler asked for it with PauseRead.
	pauseUser
)

// flowControl reports whether a reason other than closing holds the
// connection: only those count in the Paused gauge, since not reading a
// closing connection is not flow control.
func (r pauseReason) flowControl() bool { return r&^pauseClosing != 0 }

type connState uint8

const (
	stateOutbound      connState = 1 << iota
	stateClosing                 // Close was called: output drains, then the socket closes
	stateCloseQueued             // gnet's Close was called
	stateClosed                  // OnClose ran, or the dial failed
	stateCanceled                // closed while the dial was pending; the handler has been told
	stateWantShutWrite           // CloseWrite was called: shut down the write side once output drains
	stateWriteShut               // the write side is shut down
	stateAdopted                 // taken over from another process (Loop.Adopt)
)

// Conn is one connection on a loop. Its methods must be called on its loop.
//
// A Conn is held for as long as its connection lives, so it keeps only what
// every open connection needs (112 bytes, one size class); what a
// connection needs for part of its life hangs off aux, which an idle open
// connection does not have.
type Conn struct {
	gc      gnet.Conn
	loop    *Loop
	handler Handler

	// Value is the handler's per-connection state.
	Value any

	sink      *Conn    // where the bytes read from this connection are written
	producer  *Conn    // the connection whose input is written into this one
	accounted int64    // queued output counted in the process's total
	aux       *connAux // nil unless dialing, queuing, half-closed, closing or in OnReadEOF

	// Positions in the loop's lists: int32, as no loop holds 2^31 connections.
	waitIdx    int32 // 1 + position in loop.waiters; 0 when not waiting
	deferIdx   int32 // 1 + position in loop.deferred; 0 when not queued
	connIdx    int32 // 1 + position in loop.conns; 0 when not open
	backlogIdx int32 // 1 + position in loop.backlogged; 0 when not there
	listener   int32 // index of the listen address that accepted it; -1 for a dial

	pause     pauseReason
	state     connState
	halfClose bool // the handler is a HalfCloseHandler: it relays half-closes, and the reactor queues c's output
}

// connAux is the state a connection holds only for part of its life. It is
// made on demand (Conn.more) and dropped again (Conn.tidy) when nothing in
// it is in use, so that a relayed connection at rest holds none of it.
type connAux struct {
	dialTimer   looptimer.Timer  // outbound: the connect's deadline, until it opens
	lingerUntil int64            // closing: when the linger ends
	out         chunkqueue.Queue // halfClose: the output the kernel has not taken (outqueue.go)
	tail        *tail            // set once the peer half-closed: the socket, outside gnet
	eofInput    gnet.Conn        // during OnReadEOF: gnet's connection, for its unread input
	eofRest     []byte           // during OnClose/OnReadEOF of a paused connection: all its unread input
	closeErr    error            // why the reactor closed it (a write error)
}

// more returns c's aux, making it if c has none: from the loop's spares
// when it has one.
func (c *Conn) more() *connAux {
	if c.aux == nil {
		l := c.loop
		if n := len(l.spareAux); n > 0 {
			c.aux, l.spareAux[n-1] = l.spareAux[n-1], nil
			l.spareAux = l.spareAux[:n-1]
		} else {
			c.aux = &connAux{}
		}
	}
	return c.aux
}

// maxSpareAux bounds a loop's spare auxes: enough for the connections whose
// queues fill and drain in turn (each round would otherwise allocate one,
// and its chunk list), little memory when they all rest.
const maxSpareAux = 256

// tidy drops c's aux once nothing in it is in use, keeping it as one of
// the loop's spares (with its chunk list's capacity) while there is room.
func (c *Conn) tidy() {
	a := c.aux
	if a == nil || a.dialTimer.Armed() || a.lingerUntil != 0 || a.out.Len() != 0 || a.tail != nil ||
		a.eofInput != nil || a.eofRest != nil || a.closeErr != nil {
		return
	}
	c.aux = nil
	if l := c.loop; len(l.spareAux) < maxSpareAux {
		*a = connAux{out: a.out} // empty, so it keeps only its chunk list's room
		l.spareAux = append(l.spareAux, a)
	}
}

// ownsQueue reports whether the reactor, not gnet, queues c's output.
func (c *Conn) ownsQueue() bool { return c.halfClose }

// queued returns the output the reactor holds queued for c.
func (c *Conn) queued() int {
	if c.aux == nil {
		return 0
	}
	return c.aux.out.Len()
}

// releaseQueue drops the output the reactor holds queued for c.
func (c *Conn) releaseQueue() {
	if c.aux != nil {
		c.aux.out.Release()
	}
}

// tailSock returns c's socket once gnet has let it go (halfclose.go), or nil.
func (c *Conn) tailSock() *tail {
	if c.aux == nil {
		return nil
	}
	return c.aux.tail
}

// eofRest returns the unread input gathered while gnet closes c, or nil.
func (c *Conn) eofRest() []byte {
	if c.aux == nil {
		return nil
	}
	return c.aux.eofRest
}

// lingerDeadline returns when a closing c's linger ends (0: none set).
func (c *Conn) lingerDeadline() int64 {
	if c.aux == nil {
		return 0
	}
	return c.aux.lingerUntil
}

// closeErr returns the error the reactor closed c for, or nil.
func (c *Conn) closeErr() error {
	if c.aux == nil {
		return nil
	}
	return c.aux.closeErr
}

// stopDial disarms c's connect deadline.
func (c *Conn) stopDial() {
	if c.aux != nil {
		c.loop.timers.Stop(&c.aux.dialTimer)
	}
}

func newConn(l *Loop, h Handler) *Conn {
	c := &Conn{loop: l, handler: h, listener: -1}
	c.sink, c.producer = c, c
	return c
}

// Loop returns the loop that owns the connection.
func (c *Conn) Loop() *Loop { return c.loop }

// Listener returns the index, in Config.Addrs, of the listen address that
// accepted c, or -1 for an outbound connection.
func (c *Conn) Listener() int { return int(c.listener) }

// Opened reports whether the socket exists: false while an outbound dial is pending.
func (c *Conn) Opened() bool { return (c.gc != nil || c.tailSock() != nil) && c.state&stateClosed == 0 }

// Closing reports whether Close or Abort was called or the connection has closed.
func (c *Conn) Closing() bool {
	return c.state&(stateClosing|stateCloseQueued|stateClosed|stateCanceled) != 0
}

// Paused reports whether the connection is currently not being read.
func (c *Conn) Paused() bool { return c.pause != 0 }

// RemoteAddr returns the peer's address, or nil before the socket exists.
func (c *Conn) RemoteAddr() net.Addr {
	if t := c.tailSock(); t != nil {
		return t.remote
	}
	if c.gc == nil {
		return nil
	}
	return c.gc.RemoteAddr()
}

// LocalAddr returns the local address, or nil before the socket exists.
func (c *Conn) LocalAddr() net.Addr {
	if t := c.tailSock(); t != nil {
		return t.local
	}
	if c.gc == nil {
		return nil
	}
	return c.gc.LocalAddr()
}

// Peek returns the next n buffered inbound bytes without consuming them;
// n <= 0 returns all of them. The slice is valid until Discard or the end of
// the callback. A connection whose peer half-closed has no input.
func (c *Conn) Peek(n int) ([]byte, error) {
	if rest := c.eofRest(); rest != nil {
		if n <= 0 || n > len(rest) {
			return rest, nil
		}
		return rest[:n], nil
	}
	in := c.input()
	if in == nil {
		return nil, nil
	}
	return in.Peek(n)
}

// input is where c's unread input is: gnet's connection, or during
// OnReadEOF the one gnet is closing.
func (c *Conn) input() gnet.Conn {
	if c.gc != nil {
		return c.gc
	}
	if c.aux == nil {
		return nil
	}
	return c.aux.eofInput
}

// Discard consumes n inbound bytes; a negative n consumes all of them and 0
// consumes none (unlike gnet's Discard, for which 0 means all).
func (c *Conn) Discard(n int) {
	if rest := c.eofRest(); rest != nil {
		if n < 0 || n > len(rest) {
			n = len(rest)
		}
		c.aux.eofRest = rest[n:]
		return
	}
	if in := c.input(); n != 0 && in != nil {
		_, _ = in.Discard(n)
	}
}

// InboundBuffered returns the number of inbound bytes not yet consumed.
func (c *Conn) InboundBuffered() int {
	if rest := c.eofRest(); rest != nil {
		return len(rest)
	}
	in := c.input()
	if in == nil || c.state&stateClosed != 0 {
		return 0
	}
	return in.InboundBuffered()
}

// OutboundBuffered returns the number of bytes written but not yet taken by the kernel.
func (c *Conn) OutboundBuffered() int {
	if c.ownsQueue() {
		if c.state&stateClosed != 0 {
			return 0
		}
		return c.queued()
	}
	if c.gc == nil || c.state&stateClosed != 0 {
		return 0
	}
	return c.gc.OutboundBuffered()
}

// Write writes p at once; what the kernel does not take is queued (by
// gnet, or by the reactor for a HalfCloseHandler's connection). p may be
// reused when Write returns.
func (c *Conn) Write(p []byte) error {
	if c.state&(stateCloseQueued|stateClosed|stateWriteShut) != 0 {
		return ErrClosed
	}
	if c.gc == nil && c.tailSock() == nil {
		return ErrClosed
	}
	if c.ownsQueue() {
		return c.loop.queueWrite(c, p)
	}
	before := c.gc.OutboundBuffered()
	_, err := c.gc.Write(p)
	c.afterWrite(before)
	return err
}

// Writev writes bs with one vectored write; what the kernel does not take is
// copied and queued. bs must hold at most writev.MaxIovecs slices.
func (c *Conn) Writev(bs [][]byte) error {
	if c.state&(stateCloseQueued|stateClosed|stateWriteShut) != 0 {
		return ErrClosed
	}
	if c.gc == nil && c.tailSock() == nil {
		return ErrClosed
	}
	if c.ownsQueue() {
		return c.loop.queueWrite(c, bs...)
	}
	before := c.gc.OutboundBuffered()
	_, err := c.gc.Writev(bs)
	c.afterWrite(before)
	return err
}

// SetSink declares that the bytes read from c are written into sink, so that
// c stops being read while sink's output is past the high watermark.
func (c *Conn) SetSink(sink *Conn) {
	c.sink = sink
	sink.producer = c
}

// Backpressure checks c's sink after the handler wrote into it, and pauses
// reading c when the sink's output is past the high watermark. It reports
// whether c is paused; a handler should stop consuming input when it is.
func (c *Conn) Backpressure() bool {
	s := c.sink
	if q := s.OutboundBuffered(); q > c.loop.srv.cfg.HighWatermark || c.loop.overBudget(q) {
		c.pauseFor(pauseSinkFull)
		c.loop.watch(s)
	}
	return c.pause != 0
}

// PauseRead stops reading c until ResumeRead.
func (c *Conn) PauseRead() { c.pauseFor(pauseUser) }

// ResumeRead undoes PauseRead; bytes buffered meanwhile are offered to OnTraffic.
func (c *Conn) ResumeRead() { c.resumeFor(pauseUser) }

func (c *Conn) pauseFor(r pauseReason) {
	was := c.pause
	c.pause |= r
	if c.state&stateClosed != 0 {
		return
	}
	if !was.flowControl() && c.pause.flowControl() {
		c.loop.stats.Paused.Add(1)
		c.loop.stats.PauseEvents.Add(1)
	}
	if was == 0 && c.gc != nil {
		c.loop.setReadInterest(c, false)
	}
}

func (c *Conn) resumeFor(r pauseReason) {
	if c.pause&r == 0 {
		return
	}
	was := c.pause
	c.pause &^= r
	if c.state&stateClosed != 0 {
		return
	}
	if was.flowControl() && !c.pause.flowControl() {
		c.loop.stats.Paused.Add(-1)
	}
	if c.pause != 0 || c.gc == nil {
		return
	}
	c.loop.setReadInterest(c, true)
	if c.gc.InboundBuffered() > 0 {
		c.loop.deferTraffic(c)
	}
}

// Close closes c without losing output: reading stops at once, and the socket
// closes when its queued output has drained or after the server's Linger,
// whichever comes first. An expired linger resets the connection, so that
// the peer does not take the truncated stream for a whole one, and is
// counted and logged (see Config.Linger).
func (c *Conn) Close() {
	if c.Closing() {
		return
	}
	c.state |= stateClosing
	if c.gc == nil && c.tailSock() == nil { // dial pending: OnOpen will close it
		c.state |= stateCanceled
		c.stopDial()
		return
	}
	c.pauseFor(pauseClosing)
	if c.OutboundBuffered() == 0 {
		c.closeNow()
		return
	}
	c.more().lingerUntil = c.loop.Now() + int64(c.loop.srv.cfg.Linger)
	c.loop.watch(c)
}

// Abort closes c at once. Queued output gets one write attempt; if any is
// still queued then, the connection is reset (SO_LINGER 0) rather than
// closed with a FIN, so that the peer cannot take the truncated stream for
// a whole one, and the reset is counted (AbortResets, AbortQueuedBytes).
func (c *Conn) Abort() {
	if c.state&(stateCloseQueued|stateClosed) != 0 {
		return
	}
	c.state |= stateClosing
	if c.gc == nil && c.tailSock() == nil {
		c.state |= stateCanceled
		c.stopDial()
		return
	}
	l := c.loop
	if c.queued() > 0 {
		l.flushQueue(c)
		if c.state&(stateCloseQueued|stateClosed) != 0 {
			return // the write failed: it is closing already
		}
	}
	if out := c.OutboundBuffered(); out > 0 {
		// gnet's close makes its one write attempt first; past it the kernel
		// discards what is left and sends RST.
		_ = unix.SetsockoptLinger(c.sockFD(), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
		l.stats.AbortResets.Add(1)
		l.stats.AbortQueuedBytes.Add(int64(out))
	}
	c.closeNow()
}

func (c *Conn) closeNow() {
	if c.state&(stateCloseQueued|stateClosed) != 0 {
		return
	}
	if c.tailSock() != nil {
		c.loop.closeTail(c)
		return
	}
	c.state |= stateCloseQueued
	_ = c.gc.Close()
}
