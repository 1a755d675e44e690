package reactor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"

	"github.com/tidegate/tidegate/reactor/adopt"
)

// Handing connections over to another process (a live upgrade): the old
// process duplicates each socket and passes the duplicate over a Unix socket
// (see package handoverwire); its own connection then closes without touching the
// socket, since the duplicate keeps it open, so the peer sees nothing. The
// new process registers the socket on one of its loops with Adopt.

// ErrHandedOver is the error a handler's OnClose gets for a connection that
// Detach gave to another process.
var ErrHandedOver = errors.New("reactor: connection handed over to another process")

// Detached is a connection Detach took away from this server, for another
// process to adopt.
type Detached struct {
	File   *os.File // a duplicate of the socket; the caller closes it
	Unread []byte   // input read from the socket and not consumed
	Queued []byte   // output written and not yet sent: the new owner sends it first
}

// Detach takes c's socket away from this server for another process. c
// must not be read any more (PauseRead); output the reactor queued for it
// (a HalfCloseHandler's connection) goes with it, while output queued in
// gnet's buffer makes Detach fail and c go on. Detach returns a duplicate
// of the socket, the input c has buffered but not consumed, and its queued
// output; c then closes without touching the socket (its peer sees
// nothing), and its handler's OnClose gets ErrHandedOver.
func (c *Conn) Detach() (Detached, error) {
	if err := c.detachable(); err != nil {
		return Detached{}, err
	}
	fd, err := dupCloseOnExec(c.gc.Fd())
	if err != nil {
		return Detached{}, fmt.Errorf("reactor: detach: dup: %w", err)
	}
	return c.detachWith(fd), nil
}

// DetachPair detaches a and b, such as a client and its backend, together:
// both go, or, when either cannot (its descriptor cannot be duplicated, at
// the descriptor limit), neither does and both go on here. Detaching one
// and then failing on the other would end the first one's peer.
func DetachPair(a, b *Conn) (Detached, Detached, error) {
	if err := a.detachable(); err != nil {
		return Detached{}, Detached{}, err
	}
	if err := b.detachable(); err != nil {
		return Detached{}, Detached{}, err
	}
	fa, err := dupCloseOnExec(a.gc.Fd())
	if err != nil {
		return Detached{}, Detached{}, fmt.Errorf("reactor: detach: dup: %w", err)
	}
	fb, err := dupCloseOnExec(b.gc.Fd())
	if err != nil {
		_ = unix.Close(fa)
		return Detached{}, Detached{}, fmt.Errorf("reactor: detach: dup: %w", err)
	}
	return a.detachWith(fa), b.detachWith(fb), nil
}

// detachable reports why c cannot be detached now, if it cannot.
func (c *Conn) detachable() error {
	switch {
	case c.gc == nil || c.tailSock() != nil || c.Closing():
		return errors.New("reactor: detach: the connection is not open both ways")
	case c.pause&pauseUser == 0:
		return errors.New("reactor: detach: the connection is still being read (PauseRead first)")
	case c.gc.OutboundBuffered() > 0:
		return fmt.Errorf("reactor: detach: %d bytes of output are still queued in gnet's buffer", c.gc.OutboundBuffered())
	}
	return nil
}

// detachWith takes c away from this server, fd being the duplicate of its
// socket that goes with it: c closes without touching the socket.
func (c *Conn) detachWith(fd int) Detached {
	in, _ := c.gc.Peek(-1)
	d := Detached{Unread: append([]byte(nil), in...), File: os.NewFile(uintptr(fd), "handover")}
	if n := c.queued(); n > 0 {
		q := &c.aux.out
		d.Queued = make([]byte, 0, n)
		for _, b := range q.AppendBufs(nil, q.Chunks()) {
			d.Queued = append(d.Queued, b...)
		}
	}
	_, _ = c.gc.Discard(-1)
	if c.ownsQueue() {
		c.releaseQueue()
		c.loop.account(c)
	}
	c.loop.unwatch(c)
	c.more().closeErr = ErrHandedOver
	c.state |= stateClosing
	c.closeNow()
	return d
}

// Adopt registers nc, a connection taken over from another process, on this
// loop: h.OnOpen runs for it there with c.Value set to value, as for a
// connection accepted on listener (its index in Config.Addrs; -1 for an
// outbound one). Two connections adopted on one loop share it, as a client
// and the backend dialed for it do. Adopt returns once gnet has registered
// its own duplicate of nc, after OnOpen; the caller closes nc. It must not
// be called on a loop.
func (l *Loop) Adopt(nc net.Conn, h Handler, value any, listener int) (*Conn, error) {
	if err := l.srv.adoptions.Enter(); err != nil {
		return nil, fmt.Errorf("reactor: adopting %s: %w", adopt.PeerName(nc), err)
	}
	defer l.srv.adoptions.Leave() // once it is open, or failed
	c, res, err := l.enrollAdopted(nc, h, value, listener)
	if err == nil {
		err = registered(res)
	}
	if err != nil {
		l.srv.holdAdopted(listener, -1)
		return nil, fmt.Errorf("reactor: adopting %s: %w", adopt.PeerName(nc), err)
	}
	return c, nil
}

// AdoptPair is Loop.Adopt for two connections at once, such as a client
// and the backend dialed for it, on l: both registrations run together, so
// the two OnOpens may come in either order, and a handler that needs both
// must wait for the second. If either cannot be registered, the other is
// closed and AdoptPair reports the failure. It must not be called on a loop.
func (l *Loop) AdoptPair(a, b net.Conn, ha, hb Handler, value any, listenerA, listenerB int) (*Conn, *Conn, error) {
	if err := l.srv.adoptions.Enter(); err != nil {
		return nil, nil, fmt.Errorf("reactor: adopting %s: %w", adopt.PeerName(a), err)
	}
	defer l.srv.adoptions.Leave()
	ca, resA, errA := l.enrollAdopted(a, ha, value, listenerA)
	cb, resB, errB := l.enrollAdopted(b, hb, value, listenerB)
	if errA == nil {
		errA = registered(resA)
	}
	if errB == nil {
		errB = registered(resB)
	}
	if errA == nil && errB == nil {
		return ca, cb, nil
	}
	for _, x := range []struct {
		c   *Conn
		err error
		ln  int
	}{{ca, errA, listenerA}, {cb, errB, listenerB}} {
		if x.err != nil {
			l.srv.holdAdopted(x.ln, -1)
		} else {
			_ = l.Execute(x.c.Close)
		}
	}
	if errA != nil {
		return nil, nil, fmt.Errorf("reactor: adopting %s: %w", adopt.PeerName(a), errA)
	}
	return nil, nil, fmt.Errorf("reactor: adopting %s: %w", adopt.PeerName(b), errB)
}

// enrollAdopted starts the registration of nc on l for Adopt and AdoptPair.
func (l *Loop) enrollAdopted(nc net.Conn, h Handler, value any, listener int) (*Conn, <-chan gnet.RegisteredResult, error) {
	c := newConn(l, h)
	c.Value = value
	c.listener = int32(listener)
	c.state |= stateAdopted
	if listener < 0 {
		c.state |= stateOutbound
	}
	l.srv.holdAdopted(listener, 1)
	if err := adopt.CheckPeer(nc); err != nil {
		return nil, nil, err
	}
	res, err := l.el.Enroll(gnet.NewContext(context.Background(), c), nc)
	return c, res, err
}

// registered waits for the result of an enroll. A channel closed empty is
// an enroll worker that panicked: nothing was registered.
func registered(res <-chan gnet.RegisteredResult) error {
	r, ok := <-res
	if !ok {
		return errors.New("gnet's enroll ended without a result")
	}
	return r.Err
}

// AdoptPair is Loop.AdoptPair on the loop with the fewest open connections.
// Until every loop has been seen (a loop is known from its first
// connection), the first connection goes where gnet places it, as with
// Server.Adopt, and the second follows it there. It must not be called on a
// loop.
func (s *Server) AdoptPair(a, b net.Conn, ha, hb Handler, value any, listenerA, listenerB int) (*Conn, *Conn, error) {
	if loops := s.Loops(); len(loops) == s.cfg.Loops {
		best := loops[0]
		for _, l := range loops[1:] {
			if l.stats.Active.Load() < best.stats.Active.Load() {
				best = l
			}
		}
		return best.AdoptPair(a, b, ha, hb, value, listenerA, listenerB)
	}
	ca, err := s.Adopt(a, ha, value, listenerA)
	if err != nil {
		return nil, nil, err
	}
	cb, err := ca.Loop().Adopt(b, hb, value, listenerB)
	if err != nil {
		_ = ca.Loop().Execute(ca.Close)
		return nil, nil, err
	}
	return ca, cb, nil
}

// adoption is the registration context of a connection Server.Adopt takes
// over: OnOpen makes its Conn on the loop gnet chose.
type adoption struct {
	h        Handler
	value    any
	listener int
	c        *Conn // set by OnOpen, read once gnet has reported the registration
}

// Adopt is Loop.Adopt on the least loaded loop, which gnet chooses; a
// second connection that must share the first one's loop is adopted with
// c.Loop().Adopt. It must not be called on a loop.
func (s *Server) Adopt(nc net.Conn, h Handler, value any, listener int) (*Conn, error) {
	if err := s.adoptions.Enter(); err != nil {
		return nil, fmt.Errorf("reactor: adopting %s: %w", adopt.PeerName(nc), err)
	}
	defer s.adoptions.Leave()
	s.holdAdopted(listener, 1)
	a := &adoption{h: h, value: value, listener: listener}
	err := adopt.CheckPeer(nc)
	if err == nil {
		var res <-chan gnet.RegisteredResult
		if res, err = s.engine.Register(gnet.NewContext(gnet.NewNetConnContext(context.Background(), nc), a)); err == nil {
			err = registered(res)
		}
	}
	c := a.c
	if err == nil && c == nil {
		err = errors.New("no loop opened it")
	}
	if err != nil {
		s.holdAdopted(listener, -1)
		return nil, fmt.Errorf("reactor: adopting %s: %w", adopt.PeerName(nc), err)
	}
	return c, nil
}

// holdAdopted counts (n 1) or uncounts (n -1) a connection adopted as
// accepted on listener against MaxConns and the descriptor budget, as an
// accept does; an outbound one (listener -1) counts with its client.
func (s *Server) holdAdopted(listener, n int) {
	if listener >= 0 {
		s.acceptedOpen.Add(int64(n))
		holdFDs(n * s.cfg.FDsPerConn)
	}
}

// EachConn calls f for every open connection on the loop that was accepted
// (not dialed). It must run on the loop; f may close connections.
// The loop's scratch copy keeps f free to close connections without an
// allocation per call (a hand-over calls it every few milliseconds); so
// EachConn must not be called from f.
func (l *Loop) EachConn(f func(*Conn)) {
	l.connScratch = append(l.connScratch[:0], l.conns...)
	for _, c := range l.connScratch {
		if c.listener >= 0 && c.state&(stateCloseQueued|stateClosed) == 0 {
			f(c)
		}
	}
	clear(l.connScratch)
}
