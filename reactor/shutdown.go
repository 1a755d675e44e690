package reactor

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrDrainDeadline is returned by Shutdown when connections were still open
// at its deadline and had to be closed.
var ErrDrainDeadline = errors.New("reactor: drain deadline passed with connections open")

// DrainHandler is a Handler that says goodbye to connections still open
// when a Shutdown's deadline passes, such as a protocol's disconnect
// message. The reactor then closes c with Close, which keeps queued output.
type DrainHandler interface {
	Handler
	OnDrainDeadline(c *Conn)
}

// drainPoll is how often Shutdown looks at the open connections.
const drainPoll = 20 * time.Millisecond

// Shutdown stops the server gracefully, as net/http's Server.Shutdown does:
// it stops accepting at once (new connections are refused by the closed
// listeners), lets the open connections run until they end or ctx ends,
// and then stops. At ctx's end each connection still open is closed: by
// OnDrainDeadline where the handler has it, with Close otherwise, which
// delivers queued output within Linger. It returns ErrDrainDeadline when
// connections had to be closed that way.
func (s *Server) Shutdown(ctx context.Context) error {
	s.StopAccepting()
	if s.waitConns(ctx) {
		return s.stopNow()
	}
	for _, l := range s.Loops() {
		_ = l.Execute(l.closeAll)
	}
	lctx, cancel := context.WithTimeout(context.Background(), s.cfg.Linger+time.Second)
	defer cancel()
	s.waitConns(lctx)
	return errors.Join(ErrDrainDeadline, s.stopNow())
}

// StopAccepting closes the listeners once they have handed over the
// connections already in their backlog (see acceptor.Set.StopAfterBacklog):
// connections that are open go on, and when it returns no new one is taken.
// Health then reports the server as draining.
func (s *Server) StopAccepting() {
	s.accept.StopAfterBacklog()
	s.draining.Store(true)
}

// HoldAccepting stops accepting without closing the listeners, for while
// another process accepts on the same sockets (a live upgrade's new one):
// connections in the backlog are left to it. It returns once every accept
// goroutine is parked (or a second has passed): a connection an Accept under
// way took meanwhile is served here, one that arrives after is not.
// ResumeAccepting undoes it, should that process go away; ReleaseListeners
// makes it final.
func (s *Server) HoldAccepting() { s.accept.Hold() }

// ResumeAccepting undoes HoldAccepting. The deadline that ended the held
// Accepts goes first: an accept goroutine that saw the hold end with the
// deadline still set would take its timeout for an accept error.
func (s *Server) ResumeAccepting() { s.accept.Resume(testHookResumeAccepting) }

// testHookResumeAccepting, when a test sets it, runs in ResumeAccepting
// between its two steps.
var testHookResumeAccepting func()

// ReleaseListeners closes this process's listening descriptors for good
// without taking their backlog, which another process accepting on the
// same sockets serves: unlike StopAccepting, no connection is taken on the
// way out. Health then reports the server as draining.
func (s *Server) ReleaseListeners() {
	s.accept.Release()
	s.draining.Store(true)
}

// OpenConns returns how many connections are open now, accepted and dialed.
func (s *Server) OpenConns() int64 {
	var n int64
	for _, l := range s.Loops() {
		n += l.stats.Active.Load()
	}
	return n
}

// waitConns waits until no connection is open or being adopted, or ctx
// ends; it reports whether none is (no adoption starts after that).
func (s *Server) waitConns(ctx context.Context) bool {
	return s.adoptions.WaitIdle(ctx, s.done, drainPoll, s.OpenConns)
}

func (s *Server) stopNow() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		return fmt.Errorf("reactor: shutdown: %w", err)
	}
	return nil
}

// closeAll runs on the loop at a drain deadline: every accepted connection
// still open is asked to close.
func (l *Loop) closeAll() {
	for _, c := range append([]*Conn(nil), l.conns...) {
		if c.Closing() || c.listener < 0 {
			continue // dialed connections close with the connection they serve
		}
		if d, ok := c.handler.(DrainHandler); ok {
			d.OnDrainDeadline(c)
		}
		c.Close()
	}
}

// track adds c to the loop's open connections.
func (l *Loop) track(c *Conn) {
	l.conns = append(l.conns, c)
	c.connIdx = int32(len(l.conns))
}

// untrack removes c from the loop's open connections.
func (l *Loop) untrack(c *Conn) {
	if c.connIdx == 0 {
		return
	}
	i, last := int(c.connIdx)-1, len(l.conns)-1
	if i != last {
		l.conns[i] = l.conns[last]
		l.conns[i].connIdx = int32(i + 1)
	}
	l.conns[last] = nil
	l.conns = l.conns[:last]
	c.connIdx = 0
}
