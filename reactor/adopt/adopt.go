// Package adopt holds the parts of adopting a connection from another
// process (a live upgrade's new process taking the old one's sockets) that
// need none of the reactor's internals: the gate that keeps a drain and
// the adoptions under way in step, and the check of a socket's peer.
package adopt

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// ErrStopping is an adoption's error once the server's drain found nothing
// open and stops: the connection is not taken, and its socket stays the
// caller's (the old process keeps the session).
var ErrStopping = errors.New("the server is stopping: it adopts no connection")

// Gate counts the adoptions under way, from before a connection is
// registered until its registration is over (it is then open, and counted
// as such), so that a drain does not take a server with one under way for
// idle: it would stop the loops as the registration ends and cut the
// connection the other process has just let go. Once the drain has found
// nothing open and nothing under way, the gate is closed and no adoption
// starts: the two are decided under one lock, so each adoption is either
// waited for or refused. The zero Gate is open.
type Gate struct {
	mu       sync.Mutex
	underWay int
	closed   bool
}

// Enter starts an adoption, or reports ErrStopping once the gate is
// closed. Each Enter that succeeds is paired with a Leave.
func (g *Gate) Enter() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrStopping
	}
	g.underWay++
	return nil
}

// Leave ends an adoption Enter started, once its connection is open (or
// its registration failed).
func (g *Gate) Leave() {
	g.mu.Lock()
	g.underWay--
	g.mu.Unlock()
}

// UnderWay returns how many adoptions are under way.
func (g *Gate) UnderWay() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.underWay
}

// closeIfIdle closes the gate when no adoption is under way and open
// reports no connection open, and reports whether it did. An adoption
// counts as open before it leaves, so reading open after seeing none under
// way misses none.
func (g *Gate) closeIfIdle(open func() int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.underWay == 0 && open() == 0 {
		g.closed = true
	}
	return g.closed
}

// WaitIdle waits, looking every poll, until no connection is open (open
// reports how many are) and no adoption is under way, and then closes the
// gate; or until ctx ends (false) or done closes (true). It reports
// whether nothing is left open.
func (g *Gate) WaitIdle(ctx context.Context, done <-chan struct{}, poll time.Duration, open func() int64) bool {
	t := time.NewTicker(poll)
	defer t.Stop()
	for !g.closeIfIdle(open) {
		select {
		case <-ctx.Done():
			return false
		case <-done:
			return true
		case <-t.C:
		}
	}
	return true
}

// errNoPeer is why a socket whose peer has gone is not adopted.
var errNoPeer = errors.New("the socket has no peer address: its peer reset it")

// CheckPeer reports whether gnet can register nc: a socket whose peer reset
// it before it was adopted has no remote address (net.FileConn found none),
// and gnet v2.9.7's enroll worker dereferences it: it panics, after
// duplicating the descriptor, and its pool closes the result channel with
// nothing in it.
func CheckPeer(nc net.Conn) error {
	if nc.RemoteAddr() == nil {
		return errNoPeer
	}
	return nil
}

// PeerName names nc's peer for an error.
func PeerName(nc net.Conn) string {
	if a := nc.RemoteAddr(); a != nil {
		return a.String()
	}
	return "a socket without a peer"
}
