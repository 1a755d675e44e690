package reactor

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/reactor/drainwatch"
	"github.com/tidegate/tidegate/reactor/ipshare"
	"github.com/tidegate/tidegate/reactor/looptimer"
	"github.com/tidegate/tidegate/reactor/writev"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// Loop is tidegate's state for one gnet event loop: its timers, the
// connections waiting for output to drain, and its counters. Its methods,
// except Stats, must be called on the loop.
type Loop struct {
	srv      *Server
	spareAux []*connAux // Conn.tidy's, for Conn.more
	el       gnet.EventLoop
	index    int
	pollFD   int // the loop's epoll or kqueue descriptor

	timers   looptimer.Heap
	waiters  []*Conn    // connections whose output drain someone waits for
	waitInfo []waitInfo // parallel to waiters
	deferred []*Conn    // resumed connections with input to offer to OnTraffic
	closed   []*Conn    // half-closed connections (tails) to close at the end of the callback
	conns    []*Conn    // open connections, for a drain deadline
	// connScratch is EachConn's copy of conns.
	connScratch []*Conn

	backlogged  []*Conn // connections with output queued, for the buffer budget
	budgetTimer looptimer.Timer

	// Drain detection (drain.go): the watcher reports waiters whose socket
	// became writable; polled counts the waiters checked every DrainPoll
	// meanwhile. With no watcher (pollAll), every waiter is polled.
	drain       *drainwatch.Watcher
	pollAll     bool
	polled      int
	waitByFD    map[int]*Conn
	drainChecks int           // checks of waiters so far, for tests
	ips         ipshare.Table // shared copies of the connections' IPs (addrs.go)
	lingerTimer looptimer.Timer
	pollScratch [1]unix.PollFd

	stats LoopStats

	iovecs writev.Scratch // for writevBatch and queueWrite's writes
	bufs   [][]byte       // scratch for flushQueue
	batch  writev.Batch   // scratch for handlers, see Batch

	// Read by the ticker goroutine.
	nextDeadline atomic.Int64
	waiting      atomic.Int32 // connections the ticker must poll every DrainPoll
	tickQueued   atomic.Bool
	tickRunnable gnet.RunnableFunc
	kick         atomic.Pointer[chan struct{}] // wakes the ticker; set by it

	// Set by the drain watcher's goroutine.
	writableQueued   atomic.Bool
	writableRunnable gnet.RunnableFunc
}

// LoopStats are one loop's counters. They are written only on the loop
// (atomically, so that Stats can read them from elsewhere).
type LoopStats struct {
	Accepted      atomic.Int64 // connections accepted
	Dialed        atomic.Int64 // outbound connections opened
	DialFailed    atomic.Int64 // outbound connections that could not be made
	Active        atomic.Int64 // connections open now
	Paused        atomic.Int64 // connections not being read now
	PauseEvents   atomic.Int64 // times a connection stopped being read
	SpuriousWakes atomic.Int64 // reads gnet made on a paused connection
	LingerExpired atomic.Int64 // closes reset because output was still queued at the linger deadline
	// LingerQueuedBytes sums the output still queued in user space when those
	// lingers expired: bytes the kernel never took and the peer never got.
	LingerQueuedBytes atomic.Int64
	// AbortResets counts Aborts that reset the connection because output was
	// still queued; AbortQueuedBytes sums that output as it stood before the
	// close's one last write attempt (an upper bound of what was dropped).
	AbortResets      atomic.Int64
	AbortQueuedBytes atomic.Int64
	HalfClosed       atomic.Int64 // connections whose peer half-closed and that were kept for writing
	HalfCloseKept    atomic.Int64 // queued bytes gnet would have dropped at a half-close, sent from the copy
}

func newLoop(s *Server, el gnet.EventLoop, index int, pollFD int) *Loop {
	l := &Loop{srv: s, el: el, index: index, pollFD: pollFD, waitByFD: make(map[int]*Conn)}
	l.budgetTimer.F = l.scanBacklog
	l.tickRunnable = func(context.Context) error {
		l.tickQueued.Store(false)
		l.onTick()
		return nil
	}
	l.writableRunnable = func(context.Context) error {
		l.writableQueued.Store(false)
		l.onWritable()
		return nil
	}
	l.lingerTimer.F = l.onLingerTimer
	l.pollAll = s.cfg.pollDrain
	if !l.pollAll {
		w, err := drainwatch.New(drainEvents{l})
		if err != nil {
			s.log.Error().Err(err).Int("loop", index).Dur("drain_poll", s.cfg.DrainPoll).
				Msg("drain watcher could not start: connections waiting for drain on this loop are polled instead")
			l.pollAll = true
		}
		l.drain = w
	}
	return l
}

// Index returns the loop's position among the server's loops, in order of first use.
func (l *Loop) Index() int { return l.index }

// Now returns the loop clock: nanoseconds since the server started, updated
// every Tick (and every DrainPoll while a connection's drain is polled).
func (l *Loop) Now() int64 { return l.srv.clock.Load() }

// Schedule arms t to fire d from now; an armed timer is moved. "Now" is read
// from the clock itself, not the loop clock, which may be a tick or more
// stale, so that a timer never fires before d has passed.
func (l *Loop) Schedule(t *looptimer.Timer, d time.Duration) {
	l.timers.Schedule(t, int64(time.Since(l.srv.start))+int64(d))
}

// ScheduleAt arms t to fire at the loop clock time when.
func (l *Loop) ScheduleAt(t *looptimer.Timer, when int64) { l.timers.Schedule(t, when) }

// Stop disarms t; stopping a timer that is not armed does nothing.
func (l *Loop) Stop(t *looptimer.Timer) { l.timers.Stop(t) }

// Execute runs f on the loop; it is the way to reach a loop from another goroutine.
func (l *Loop) Execute(f func()) error {
	return l.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		f()
		l.afterCallback()
		return nil
	}))
}

func (l *Loop) onTick() {
	now := l.Now()
	for t := l.timers.PopDue(now); t != nil; t = l.timers.PopDue(now) {
		t.F()
	}
	if l.pollAll || l.polled > 0 {
		for i := 0; i < len(l.waiters); {
			w := l.waiters[i]
			if l.pollAll || l.waitInfo[i].polled {
				l.recheck(w)
				if w.waitIdx == 0 {
					continue // unwatched: the last waiter was swapped into i
				}
			}
			i++
		}
	}
	l.afterCallback()
}

// watch adds c to the connections whose output drain is awaited. A closing
// connection's linger deadline is armed even if it already waits as a sink.
func (l *Loop) watch(c *Conn) {
	if u := c.lingerDeadline(); c.state&stateClosing != 0 && (!l.lingerTimer.Armed() || u < l.lingerTimer.When()) {
		l.ScheduleAt(&l.lingerTimer, u)
	}
	if c.waitIdx != 0 {
		return
	}
	fd := c.sockFD()
	l.waiters = append(l.waiters, c)
	l.waitInfo = append(l.waitInfo, waitInfo{fd: fd, lastOut: c.OutboundBuffered()})
	c.waitIdx = int32(len(l.waiters))
	if l.pollAll {
		return
	}
	if err := l.drain.Add(fd); err != nil {
		// Without the kernel's word this one is polled until its wait ends.
		l.srv.log.Error().Err(err).Int("fd", fd).Msg("drain watcher: registering a waiting connection failed: polling it")
		l.waitInfo[c.waitIdx-1].polled = true
		l.polled++
		l.scanSoon(c)
		return
	}
	l.waitInfo[c.waitIdx-1].watched = true
	l.waitByFD[fd] = c
}

func (l *Loop) unwatch(c *Conn) {
	if c.waitIdx == 0 {
		return
	}
	i, last := int(c.waitIdx)-1, len(l.waiters)-1
	info := l.waitInfo[i]
	if info.polled {
		l.polled--
	}
	if info.watched {
		delete(l.waitByFD, info.fd)
		l.drain.Remove(info.fd)
	}
	if i != last {
		l.waiters[i] = l.waiters[last]
		l.waitInfo[i] = l.waitInfo[last]
		l.waiters[i].waitIdx = int32(i + 1)
	}
	l.waiters[last] = nil
	l.waiters = l.waiters[:last]
	l.waitInfo = l.waitInfo[:last]
	c.waitIdx = 0
	l.scanSoon(c) // what it still holds drains as gnet writes it
}

// checkDrain acts on a connection whose drain is awaited and reports whether
// the wait is over.
func (l *Loop) checkDrain(w *Conn, now int64) bool {
	if w.state&(stateClosed|stateCloseQueued) != 0 {
		return true
	}
	if w.queued() > 0 {
		l.flushQueue(w)
		if w.state&(stateClosed|stateCloseQueued) != 0 {
			return true
		}
	}
	out := w.OutboundBuffered()
	if w.state&stateWantShutWrite != 0 && out == 0 && w.state&stateClosing == 0 {
		w.shutWrite()
	}
	if w.state&stateClosing != 0 {
		if out == 0 {
			w.closeNow()
			return true
		}
		if now >= w.lingerDeadline() {
			l.lingerExpired(w, out)
			return true
		}
		return false
	}
	// Output the reactor queues itself, or a pending shutdown, keeps the
	// connection waiting after its producer is resumed.
	settled := (!w.ownsQueue() || out == 0) && w.state&stateWantShutWrite == 0
	p := w.producer
	if p.sink != w || p.pause&pauseSinkFull == 0 {
		return settled
	}
	// Over the buffer budget a sink must drain to the budget's floor, not
	// only to the low watermark, before its producer goes on.
	if out <= l.srv.cfg.LowWatermark && !l.overBudget(out) {
		p.resumeFor(pauseSinkFull)
		return settled
	}
	return false
}

// deferTraffic queues c's buffered input for OnTraffic once the current callback ends.
func (l *Loop) deferTraffic(c *Conn) {
	if c.deferIdx != 0 {
		return
	}
	l.deferred = append(l.deferred, c)
	c.deferIdx = int32(len(l.deferred))
}

// afterCallback runs at the end of every callback on the loop: it offers
// resumed connections their buffered input and publishes the loop's state to
// the ticker.
func (l *Loop) afterCallback() {
	for i := 0; i < len(l.deferred); i++ {
		c := l.deferred[i]
		c.deferIdx = 0
		if c.pause == 0 && c.state&(stateClosing|stateCloseQueued|stateClosed) == 0 && c.InboundBuffered() > 0 {
			l.traffic(c)
		}
		l.deferred[i] = nil
	}
	l.deferred = l.deferred[:0]
	if len(l.closed) > 0 {
		l.finishTails()
	}
	l.nextDeadline.Store(l.timers.Next())
	polled := l.polled
	if l.pollAll {
		polled = len(l.waiters)
	}
	if l.waiting.Swap(int32(polled)) == 0 && polled > 0 {
		l.kickTicker()
	}
}

// traffic hands c's input to its handler and settles flow control afterwards.
func (l *Loop) traffic(c *Conn) {
	c.handler.OnTraffic(c)
	if c.waitIdx != 0 && c.state&stateClosed == 0 && l.checkDrain(c, l.Now()) {
		l.unwatch(c)
	}
	// A producer held back because c's unread input was full may go on once c has consumed it.
	if p := c.producer; p != c && p.pause&pausePeerInboundFull != 0 && c.InboundBuffered() <= l.inboundCap() {
		p.resumeFor(pausePeerInboundFull)
	}
}

// inboundCap is how much unread input a paused connection may hold before its producer is paused too.
func (l *Loop) inboundCap() int { return 4 * l.srv.cfg.ReadBufferCap }

// Batch returns the loop's scratch batch. A handler may use it within one
// callback and must write it (Conn.WriteBatch) or reset it before the
// callback returns.
func (l *Loop) Batch() *writev.Batch { return &l.batch }
