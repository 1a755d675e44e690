package reactor

import (
	"github.com/tidegate/tidegate/reactor/bufferbudget"
	"github.com/tidegate/tidegate/reactor/chunkqueue"
)

// The process's buffer budget. Each connection's high watermark bounds the
// output queued for it, but 9,000 sessions with stalled readers would still
// take 9,000 × the watermark. With a budget set, once the output queued in
// the whole process passes it, a producer is paused as soon as its sink
// holds more than budgetFloor: the sinks already holding the most stay
// where they are, and the rest can add little, so the total stays near the
// budget plus budgetFloor per connection.
//
// The total is kept exactly for what is written (each write adds what it
// left queued) and for what the reactor drains of the queues it owns, and
// refreshed for what gnet drains behind our back by a scan, every Tick, of
// the connections that had output queued. The scan runs only while one of
// them can drain unseen (drainsUnseen): a connection waiting for its drain
// with a full socket cannot, until the drain watcher reports room, and
// recheck accounts it then. So output held by stalled readers costs no
// wake-up at all, as for an idle connection, and nothing is scanned while
// nothing is queued.

// budgetFloor is what a sink may hold while the process is over budget.
const budgetFloor = chunkqueue.ChunkSize

// AccountInput adds delta bytes (negative to give them back) to the unread
// input the process's budget counts, for input a handler keeps unconsumed
// that no watermark bounds, such as a connection's before it relays. Past
// the budget, producers pause as they do for queued output.
func (l *Loop) AccountInput(delta int) {
	d := int64(delta)
	n := bufferbudget.AddHeld(d)
	if b := l.srv.cfg.BufferBudget; b > 0 && d > 0 && n > b && n-d <= b {
		l.srv.sweepBudget()
	}
}

// OverBudget reports whether the output queued and the input held in the
// process are past l's server's budget (never, without one): a handler
// should then take on no more input it has to hold.
func (l *Loop) OverBudget() bool { return bufferbudget.Over(l.srv.cfg.BufferBudget) }

// account brings the process total up to date with c's queued output, and
// keeps c in the loop's scan while it has some.
func (l *Loop) account(c *Conn) { l.accountQueued(c, c.OutboundBuffered()) }

// accountQueued is account with c's queued output already read.
func (l *Loop) accountQueued(c *Conn, queued int) {
	q := int64(queued)
	if c.ownsQueue() {
		q = 0 // the memory, whole chunks
		if c.aux != nil {
			q = int64(c.aux.out.Held())
		}
	}
	if d := q - c.accounted; d != 0 {
		n := bufferbudget.AddQueued(d)
		c.accounted = q
		if b := l.srv.cfg.BufferBudget; b > 0 && n > b && n-d <= b {
			l.srv.sweepBudget()
		}
	}
	switch {
	case q > 0 && c.backlogIdx == 0:
		l.backlogged = append(l.backlogged, c)
		c.backlogIdx = int32(len(l.backlogged))
		l.scanSoon(c)
	case q == 0:
		l.dropBacklogged(c)
	}
}

// drainsUnseen reports whether c's queued output can go down without the
// reactor seeing it, so that only a scan finds out: gnet drains its queue
// on the socket's writable events. A queue the reactor owns it drains
// itself, accounting each write; a waiter whose socket was full at its last
// check (watched, not polled) drains only after the drain watcher reports
// room, and recheck accounts it then.
func (l *Loop) drainsUnseen(c *Conn) bool {
	if c.ownsQueue() {
		return false
	}
	if c.waitIdx != 0 {
		info := &l.waitInfo[c.waitIdx-1]
		return !info.watched || info.polled
	}
	return true
}

// scanSoon arms the backlog scan for c, which has output queued, if c's
// output can drain unseen: it became backlogged, its wait ended, or its
// socket has room again.
func (l *Loop) scanSoon(c *Conn) {
	if c.backlogIdx != 0 && !l.budgetTimer.Armed() && l.drainsUnseen(c) {
		l.Schedule(&l.budgetTimer, l.srv.cfg.Tick)
	}
}

// unaccount removes a closing connection's queued output from the total.
func (l *Loop) unaccount(c *Conn) {
	if c.accounted != 0 {
		bufferbudget.AddQueued(-c.accounted)
		c.accounted = 0
	}
	l.dropBacklogged(c)
}

func (l *Loop) dropBacklogged(c *Conn) {
	if c.backlogIdx == 0 {
		return
	}
	i, last := int(c.backlogIdx)-1, len(l.backlogged)-1
	if i != last {
		l.backlogged[i] = l.backlogged[last]
		l.backlogged[i].backlogIdx = int32(i + 1)
	}
	l.backlogged[last] = nil
	l.backlogged = l.backlogged[:last]
	c.backlogIdx = 0
}

// scanBacklog refreshes the total for what gnet drained since the last
// look; it runs on the loop every Tick while some connection with output
// queued can drain unseen.
func (l *Loop) scanBacklog() {
	again := false
	for i := 0; i < len(l.backlogged); {
		c := l.backlogged[i]
		if !l.drainsUnseen(c) {
			i++
			continue
		}
		if l.account(c); c.backlogIdx == 0 {
			continue // drained: the last was swapped into i
		}
		again = true
		i++
	}
	if again {
		l.Schedule(&l.budgetTimer, l.srv.cfg.Tick)
	}
}

// sweepBudget runs when the process's total passes the budget: on every
// loop, the producers of connections with output queued stop being read at
// once, instead of each after one more read, so that sessions filling in
// parallel stop together near the budget.
func (s *Server) sweepBudget() {
	for _, l := range s.Loops() {
		_ = l.Execute(l.pauseBacklogged)
	}
}

func (l *Loop) pauseBacklogged() {
	for _, c := range l.backlogged {
		if p := c.producer; p.sink == c && c.accounted > budgetFloor && c.state&stateClosed == 0 {
			p.pauseFor(pauseSinkFull)
			l.watch(c)
		}
	}
}

// overBudget reports whether a sink holding queued bytes must stop its
// producer for the process's budget.
func (l *Loop) overBudget(queued int) bool {
	b := l.srv.cfg.BufferBudget
	return queued > budgetFloor && bufferbudget.Over(b)
}
