package reactor

import (
	"context"
	"time"

	"github.com/tidegate/tidegate/reactor/drainwatch"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// Drain detection.
//
// gnet says nothing when a connection's outbound buffer drains, and it can
// only drain on a writable event for that socket: gnet writes queued output
// once per EPOLLOUT (or EVFILT_WRITE) and nowhere else. So a waiting
// connection (a sink whose producer is paused, or a closing connection
// lingering) needs looking at only after its socket had room. Each loop has
// a drain watcher: a second epoll (kqueue) set holding the waiting sockets
// edge-triggered for writability, and a goroutine waiting on it (package
// drainwatch). The kernel wakes both gnet's set and this one from the same
// wake-up, so by the time the watcher's Execute runs on the loop, gnet has
// written what the room allowed (the loop handles a batch's I/O before its
// tasks). While nothing drains, nothing runs: no timer, no scan, no Execute.
//
// One case escapes the edge: a write that neither fills the socket nor
// empties the buffer (gnet caps a writev at 1024 slices) leaves the socket
// writable, so gnet goes on writing on its level-triggered events while the
// watcher hears nothing more. After each check that does not end the wait,
// the socket is polled once (poll(2), no timeout): with room left, the
// connection is checked every DrainPoll until its wait ends or the room is
// gone; without room, the poll itself has armed the kernel's wake-up
// (tcp_poll sets SOCK_NOSPACE), so the watcher will hear of the next room.
// A connection whose output went down since its last check is polled too,
// until a check finds it unmoved: the watcher's wake-up can lag on a busy
// machine, and a drain in progress is when a late resume shows.
//
// Linger deadlines are one loop timer armed for the earliest of them.

// waitInfo is the loop's state for one waiting connection, kept next to
// Loop.waiters so that Conn needs no fields for it.
type waitInfo struct {
	fd       int
	watched  bool  // registered with the drain watcher
	polled   bool  // checked every DrainPoll: its output is moving or its socket has room
	lastOut  int   // its queued output at the last check
	lastMove int64 // when a check last saw it go down (nanoseconds since the server started)
}

// drainEvents is how a loop's drain watcher reaches it.
type drainEvents struct{ l *Loop }

// Writable implements drainwatch.Notifier.
func (e drainEvents) Writable() { e.l.wakeForWritable() }

// Failed implements drainwatch.Notifier.
func (e drainEvents) Failed(err error) { e.l.drainWatcherFailed(err) }

// wakeForWritable runs on the watcher goroutine after it queued descriptors:
// one Execute at a time per loop, however many events arrive meanwhile.
func (l *Loop) wakeForWritable() {
	if l.writableQueued.CompareAndSwap(false, true) {
		if err := l.el.Execute(context.Background(), l.writableRunnable); err != nil {
			l.writableQueued.Store(false) // the engine is shutting down
		}
	}
}

// drainWatcherFailed runs on the watcher goroutine when it cannot go on:
// the loop falls back to polling every waiter every DrainPoll.
func (l *Loop) drainWatcherFailed(err error) {
	l.srv.log.Error().Err(err).Int("loop", l.index).Dur("drain_poll", l.srv.cfg.DrainPoll).
		Msg("drain watcher failed: connections waiting for drain on this loop are polled instead")
	_ = l.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		l.pollAll = true
		l.afterCallback()
		return nil
	}))
}

// onWritable runs on the loop: it checks the waiters whose sockets had room.
func (l *Loop) onWritable() {
	for fd, ok := l.drain.Pop(); ok; fd, ok = l.drain.Pop() {
		// A descriptor no longer waiting (or already reused) is skipped or
		// checked needlessly; a check of a waiter is always harmless.
		if w := l.waitByFD[fd]; w != nil {
			l.recheck(w)
		}
	}
	if l.drain.Lost() {
		for i := 0; i < len(l.waiters); {
			w := l.waiters[i]
			if l.recheck(w); w.waitIdx == 0 {
				continue
			}
			i++
		}
	}
	l.afterCallback()
}

// recheck checks a waiter and, if its wait goes on, decides whether it must
// be polled: while its socket has room (see the comment at the top), and
// while its output moves, so that a drain in progress is also seen by the
// ticker when the watcher's hop to the loop is slow (a busy machine delays
// that goroutine's wake-up). A waiter whose output stopped moving and whose
// socket is full costs nothing until the kernel reports room.
func (l *Loop) recheck(w *Conn) {
	l.drainChecks++
	if l.checkDrain(w, l.Now()) {
		l.unwatch(w)
		return
	}
	if w.state&stateClosed == 0 {
		l.account(w) // what gnet drained: no scan looks at a waiter whose socket was full
	}
	if l.pollAll {
		return
	}
	info := &l.waitInfo[w.waitIdx-1]
	if !info.watched {
		return // registering failed: polled for good
	}
	out := w.OutboundBuffered()
	now := int64(time.Since(l.srv.start))
	if out < info.lastOut {
		info.lastMove = now
	}
	info.lastOut = out
	// Two periods, so that the ticker's next poll cannot find it unmoved
	// merely because it came too soon after this check.
	poll := now-info.lastMove < 2*int64(l.srv.cfg.DrainPoll) || l.socketHasRoom(info.fd)
	switch {
	case poll && !info.polled:
		info.polled = true
		l.polled++
		l.scanSoon(w)
	case !poll && info.polled:
		info.polled = false
		l.polled--
	}
}

// socketHasRoom reports whether fd is writable now. On Linux the poll also
// sets SOCK_NOSPACE on a full TCP socket, so that the next room wakes the
// watcher. An error counts as room: the connection is then polled.
func (l *Loop) socketHasRoom(fd int) bool {
	p := &l.pollScratch
	p[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT}
	n, err := unix.Poll(p[:], 0)
	if err != nil {
		return true
	}
	return n > 0 && p[0].Revents&(unix.POLLOUT|unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0
}

// onLingerTimer runs at the earliest linger deadline: it closes (and
// resets) the closing connections whose linger is over and arms the timer
// for the next deadline.
func (l *Loop) onLingerTimer() {
	now := l.Now()
	next := int64(0)
	for i := 0; i < len(l.waiters); {
		w := l.waiters[i]
		if w.state&stateClosing == 0 {
			i++
			continue
		}
		if l.checkDrain(w, now) {
			l.unwatch(w)
			continue
		}
		if u := w.lingerDeadline(); next == 0 || u < next {
			next = u
		}
		i++
	}
	if next != 0 {
		l.ScheduleAt(&l.lingerTimer, next)
	}
}

// lingerExpired closes w, whose linger ended with out bytes still queued, so
// that its peer sees a reset rather than a clean end of a truncated stream:
// SO_LINGER {on, 0} makes the close send RST. gnet's close still makes one
// write attempt first, and the reset also discards what the kernel holds
// unacknowledged, so the exact loss cannot be known: the log gives the bytes
// queued in user space (never handed to the kernel) and, where the kernel
// tells, those it held unacknowledged.
func (l *Loop) lingerExpired(w *Conn, out int) {
	fd := w.sockFD()
	unacked := drainwatch.UnackedBytes(fd)
	err := unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	l.stats.LingerExpired.Add(1)
	l.stats.LingerQueuedBytes.Add(int64(out))
	ev := l.srv.log.Warn().Str("remote", addrString(w.RemoteAddr())).Int("queued_bytes", out)
	if unacked >= 0 {
		ev = ev.Int("kernel_unacked_bytes", unacked)
	}
	ev = ev.Dur("linger", l.srv.cfg.Linger)
	if err != nil {
		ev.Err(err).Int("fd", fd).Msg("linger expired with output queued; setting SO_LINGER 0 failed, " +
			"so the peer may see a clean close of a truncated stream")
	} else {
		ev.Msg("linger expired with output queued: resetting the connection; queued_bytes are lost, " +
			"and kernel_unacked_bytes too but for what reaches the peer before the reset")
	}
	w.closeNow()
}

// kickTicker tells the server's ticker, sleeping for a Tick, that this loop
// has a waiter to poll every DrainPoll now.
func (l *Loop) kickTicker() {
	if k := l.kick.Load(); k != nil {
		select {
		case *k <- struct{}{}:
		default:
		}
	}
}

// closeDrainWatchers stops the loops' watchers once the engine has ended, so
// that no loop registers a descriptor with a closed set. It blocks until then.
func (s *Server) closeDrainWatchers() {
	<-s.done
	for _, l := range *s.loops.Load() {
		if l.drain != nil {
			l.drain.Close()
		}
	}
}
