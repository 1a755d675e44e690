package pushserver

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/looptimer"
)

type subKind uint8

const (
	kindPending subKind = iota // the request has not been read yet
	kindTCP
	kindSSE
	kindRefused
)

// subscriber is one subscriber connection. Only its loop touches it.
type subscriber struct {
	srv  *Server
	c    *reactor.Conn
	sl   *subLoop
	kind subKind

	lt  *localTopic
	idx int // position in lt.subs

	pending       []*delivery
	pendingEvents int
	pendingBytes  int   // their encoded size in the subscriber's framing
	undisclosed   int64 // events dropped and not yet reported to the subscriber

	// queued is the output the reactor held for the connection when last
	// looked at, as counted in Server.queued; recheckAt is when to look
	// again (0: nothing was queued), recheckStep the current interval.
	queued      int
	recheckAt   int64
	recheckStep int64

	flushAt          int64 // loop clock; 0 when nothing is pending or the window is 0
	phase            int64 // where in each window this subscriber's batches are due (windowEnd)
	lastWrite        int64
	lastRead         int64
	notWritableSince int64 // 0 while writable: see markNotWritable

	timer looptimer.Timer
}

// subscribeHandler serves the subscribe listener.
type subscribeHandler struct{ srv *Server }

func (h subscribeHandler) OnOpen(c *reactor.Conn) {
	sl := h.srv.subLoopOf(c.Loop())
	s := &subscriber{srv: h.srv, c: c, sl: sl}
	if w, n := int64(h.srv.cfg.Window), int64(h.srv.cfg.WindowPhases); w > 0 && n > 1 {
		s.phase = sl.phases % n * w / n // see Config.WindowPhases
		sl.phases++
	}
	s.timer.F = s.onTimer
	now := c.Loop().Now()
	s.lastRead, s.lastWrite = now, now
	c.Value = s
	sl.pending.Add(1)
	s.rearm()
}

// OnDrainDeadline writes the subscriber's pending events at once when the
// server shuts down; the reactor then closes it after they are delivered.
func (h subscribeHandler) OnDrainDeadline(c *reactor.Conn) {
	if s, ok := c.Value.(*subscriber); ok && s.kind != kindPending && s.kind != kindRefused {
		s.flush()
	}
}

// OnReadEOF closes a subscriber whose peer shut down its write side, once
// what is queued for it is delivered (within the reactor's linger).
// Implementing it makes the reactor, not gnet, queue subscribers' output:
// the reactor writes that queue on the drain watcher's word, so a
// subscriber that stopped reading costs no scan and no wake-up (see
// "Paused subscribers" in doc.go).
func (h subscribeHandler) OnReadEOF(c *reactor.Conn) { c.Close() }

func (h subscribeHandler) OnClose(c *reactor.Conn, _ error) {
	s := c.Value.(*subscriber)
	switch s.kind {
	case kindPending:
		s.sl.pending.Add(-1)
	case kindTCP:
		s.sl.tcpSubs.Add(-1)
	case kindSSE:
		s.sl.sseSubs.Add(-1)
	}
	s.kind = kindRefused
	s.sl.leave(s)
	c.Loop().Stop(&s.timer)
	s.dropPending()
	s.account(0)
}

func (h subscribeHandler) OnTraffic(c *reactor.Conn) {
	s := c.Value.(*subscriber)
	s.lastRead = c.Loop().Now()
	if s.kind != kindPending {
		c.Discard(-1) // liveness only
		return
	}
	buf, _ := c.Peek(-1)
	if k := min(len(buf), len(push.SubscribeVerb)); string(buf[:k]) == push.SubscribeVerb[:k] {
		topic, n, err := push.ParseSubscribe(buf)
		if errors.Is(err, push.ErrIncomplete) {
			return
		}
		if err != nil {
			s.refuseTCP(refuseBadSubscribe, err)
			return
		}
		if err := s.subscribe(topic, kindTCP); err != nil {
			s.refuseTCP(refuseTopicsFull, err)
			return
		}
		c.Discard(n)
		c.Discard(-1)
		return
	}
	req, _, err := push.ParseHTTPRequest(buf, s.srv.cfg.MaxHeader)
	if errors.Is(err, push.ErrIncomplete) {
		return
	}
	if err != nil {
		var he *push.HTTPError
		errors.As(err, &he)
		s.refuseHTTP(he)
		return
	}
	if err := s.subscribe([]byte(req.Topic), kindSSE); err != nil {
		s.refuseHTTP(&push.HTTPError{Status: 400, Reason: err.Error()})
		return
	}
	c.Discard(-1)
}

// subscribe registers s for topic and acknowledges it.
func (s *subscriber) subscribe(name []byte, kind subKind) error {
	var t *topic
	for {
		var err error
		if t, err = s.srv.hub.topicFor(name); err != nil {
			return err
		}
		if s.sl.join(t, s) {
			break
		}
		// t was removed from the registry after the lookup, by the last
		// subscriber of another loop leaving: the next lookup creates it anew.
	}
	s.sl.pending.Add(-1)
	s.kind = kind
	b := s.c.Loop().Batch()
	if kind == kindTCP {
		s.sl.tcpSubs.Add(1)
		f := b.Reserve(push.FrameHeaderLen(len(t.name)) + push.EventHeaderLen)
		push.PutFrameHeader(f, t.name, push.EventHeaderLen)
		push.PutEventHeader(f[push.FrameHeaderLen(len(t.name)):], push.OpSubscribed, 0)
	} else {
		s.sl.sseSubs.Add(1)
		b.Copy([]byte(push.SSEResponseHeader))
	}
	_ = s.c.WriteBatch(b)
	s.lastWrite = s.c.Loop().Now()
	s.rearm()
	return nil
}

func (s *subscriber) refuseTCP(reason int, err error) {
	s.sl.refusals[reason].Add(1)
	s.srv.log.Debug().Err(err).Str("remote", addrString(s.c)).Msg("subscribe request refused")
	_ = s.c.Write(fmt.Appendf(nil, "ERROR %s\n", err))
	s.c.Close()
}

func (s *subscriber) refuseHTTP(he *push.HTTPError) {
	reason := refuseHTTP400
	switch he.Status {
	case 404:
		reason = refuseHTTP404
	case 405:
		reason = refuseHTTP405
	case 431:
		reason = refuseHTTP431
	case 505:
		reason = refuseHTTP505
	}
	s.sl.refusals[reason].Add(1)
	s.srv.log.Debug().Int("status", he.Status).Str("reason", he.Reason).Str("remote", addrString(s.c)).Msg("SSE request refused")
	_ = s.c.Write(push.AppendHTTPError(nil, he))
	s.c.Close()
}

// enqueue appends a hand-off's events to the pending list. With a window it
// starts the window or writes early at the batch bounds; with none the caller
// flushes once everything of the hand-off is queued.
func (s *subscriber) enqueue(d *delivery, immediate bool) {
	if s.c.Closing() {
		return
	}
	s.pending = append(s.pending, d)
	s.pendingEvents += len(d.events)
	s.pendingBytes += d.size(s.kind == kindSSE)
	if immediate {
		return
	}
	cfg := &s.srv.cfg
	if s.pendingEvents >= cfg.MaxBatchEvents || s.pendingBytes >= cfg.MaxBatchBytes {
		s.flush()
		return
	}
	if s.flushAt == 0 {
		now := s.c.Loop().Now()
		if cfg.WindowPhases > 1 {
			s.flushAt = windowEnd(now, s.phase, int64(cfg.Window))
		} else {
			// A window from the first event: with events at a steady rate it
			// also takes the one due as it ends, which a fixed grid leaves
			// to the next batch (1.35x the CPU per event at 9,000 subscribers
			// and 10 events/s).
			s.flushAt = now + int64(cfg.Window)
		}
		s.armBy(s.flushAt)
	}
}

// windowEnd returns when a batch started at now is due with
// Config.WindowPhases: the next moment after now, and at most window after
// it, that is phase past a multiple of window. A subscriber's batches are
// thus a window apart while events flow, no event waits longer than the
// window, and subscribers with different phases write at different moments.
func windowEnd(now, phase, window int64) int64 {
	off := (now - phase) % window
	if off < 0 {
		off += window
	}
	return now + window - off
}

// flush writes the pending events as one batch, or as many of them, oldest
// first, as the subscriber's room takes (see room); the others are dropped,
// counted and reported at the start of the next batch written to it. The
// batch is sized before it is built, so what is dropped is never encoded.
func (s *subscriber) flush() {
	n := s.pendingEvents
	s.flushAt = 0
	if n == 0 {
		return
	}
	now := s.c.Loop().Now()
	q := s.c.OutboundBuffered()
	s.account(q)
	sse := s.kind == kindSSE
	var topic []byte
	if !sse {
		topic = s.lt.t.name
	}
	over := batchOverhead(sse, topic, s.undisclosed)
	own, global := s.room(q)
	events, eventBytes := n, s.pendingBytes
	budgetDropped := 0
	if over+eventBytes > min(own, global) {
		events, eventBytes = fitEvents(s.pending, sse, min(own, global)-over)
		if global < own { // count what the budget, not the watermark, cut
			ownEvents := n
			if over+s.pendingBytes > own {
				ownEvents, _ = fitEvents(s.pending, sse, own-over)
			}
			budgetDropped = ownEvents - events
		}
		s.undisclosed += int64(n - events)
		if q > 0 {
			s.markNotWritable(now)
		}
	}
	if events == 0 {
		s.sl.writes.count(n, n, budgetDropped, false)
		s.dropPending()
		return
	}
	reported := s.undisclosed - int64(n-events) // the drops this batch reports
	b := s.c.Loop().Batch()
	// What the kernel does not take the reactor copies into its chunks.
	if sse {
		appendSSEBatch(b, reported, s.pending, events, false)
	} else {
		appendLegacyBatch(b, topic, reported, s.pending, events, eventBytes, false)
	}
	err := s.c.WriteBatch(b)
	if s.srv.afterBatchWrite != nil {
		s.srv.afterBatchWrite()
	}
	// The counts go after the write, all at once: a reader sees the flush
	// whole or not at all.
	s.sl.writes.count(n, n-events, budgetDropped, err != nil)
	if err == nil {
		s.undisclosed -= reported
		s.lastWrite = now
		if events == n {
			s.notWritableSince = 0
		}
	}
	s.dropPending()
	s.account(s.c.OutboundBuffered())
}

// room returns the most bytes a batch for s may have, given q bytes already
// queued for it: own under its high watermark, unbounded while nothing is queued (the kernel takes a
// batch first; what it leaves is at most one batch), and global under the
// process's buffer budget: what the budget has left while nothing is
// queued, else a sixteenth of it less what s holds. Far from the budget that
// never binds; close to it, the subscribers holding the most are cut off
// first and the smallest last.
func (s *subscriber) room(q int) (own, global int) {
	cfg := &s.srv.cfg
	own, global = math.MaxInt, math.MaxInt
	if q > 0 {
		own = cfg.HighWatermark - q
	}
	if cfg.BufferBudget > 0 {
		global = cfg.BufferBudget - int(s.srv.queued.Load()) // what the budget has left
		if q > 0 {
			global = global>>budgetShareShift - q
		}
	}
	return own, global
}

// account records that q bytes are queued for s, in the process total the
// buffer budget bounds, and schedules another look while any are.
func (s *subscriber) account(q int) {
	if d := q - s.queued; d != 0 {
		s.queued = q
		s.srv.queued.Add(int64(d))
	}
	if q == 0 {
		s.recheckAt, s.recheckStep = 0, 0
		s.notWritableSince = 0
		return
	}
	if s.recheckAt == 0 && !s.c.Closing() {
		s.recheckStep = int64(s.srv.cfg.Tick)
		s.recheckAt = s.c.Loop().Now() + s.recheckStep
		s.armBy(s.recheckAt)
	}
}

// budgetShareShift sets the share of what the buffer budget has left that
// one subscriber with output queued may come to hold: 1/16.
const budgetShareShift = 4

// maxRecheck bounds the interval at which queued output is looked at again.
const maxRecheck = int64(time.Second)

// recheck looks at the queued output again: the reactor drains it on the
// drain watcher's word and tells nobody. The interval doubles while output
// stays queued; at maxRecheck the looks fall on whole multiples of it on
// the loop's clock, so that the loop's stuck subscribers are all looked at
// in one wake-up a second, not each in its own.
func (s *subscriber) recheck(now int64) {
	q := s.c.OutboundBuffered()
	s.account(q) // with q > 0 and recheckAt set, only the count changes
	if q > 0 {
		s.recheckStep = min(2*s.recheckStep, maxRecheck)
		s.recheckAt = now + s.recheckStep
		if s.recheckStep == maxRecheck {
			s.recheckAt = (now/maxRecheck + 1) * maxRecheck
		}
	}
}

// markNotWritable starts the not-writable clock, if it is not running: a
// batch was cut while output was queued, or a heartbeat was due and output
// was still queued. It stops when a batch is written whole or nothing is
// queued any more.
func (s *subscriber) markNotWritable(now int64) {
	if s.notWritableSince == 0 {
		s.notWritableSince = now
		s.rearm()
	}
}

func (s *subscriber) dropPending() {
	clear(s.pending)
	s.pending = s.pending[:0]
	s.pendingEvents, s.pendingBytes = 0, 0
	s.flushAt = 0
}

// heartbeat writes a heartbeat unless output is already queued, which
// starts the not-writable clock.
func (s *subscriber) heartbeat(now int64) {
	s.lastWrite = now
	if s.c.OutboundBuffered() > 0 {
		s.markNotWritable(now)
		return
	}
	b := s.c.Loop().Batch()
	if s.kind == kindTCP {
		name := s.lt.t.name
		f := b.Reserve(push.FrameHeaderLen(len(name)) + push.EventHeaderLen)
		push.PutFrameHeader(f, name, push.EventHeaderLen)
		push.PutEventHeader(f[push.FrameHeaderLen(len(name)):], push.OpHeartbeat, 0)
	} else {
		b.Copy(ssePing)
	}
	if s.c.WriteBatch(b) == nil {
		s.sl.heartbeats.Add(1)
	}
}

var ssePing = []byte(push.SSEPing)

func (s *subscriber) onTimer() {
	if s.c.Closing() {
		return
	}
	cfg := &s.srv.cfg
	now := s.c.Loop().Now()
	if cfg.ReadIdle > 0 && s.kind != kindSSE && now-s.lastRead >= int64(cfg.ReadIdle) {
		s.sl.readIdleCloses.Add(1)
		s.srv.log.Debug().Str("remote", addrString(s.c)).Dur("read_idle", cfg.ReadIdle).Msg("subscriber closed: read idle")
		s.c.Close()
		return
	}
	if s.recheckAt != 0 && now >= s.recheckAt {
		s.recheck(now)
	}
	if cfg.NotWritableTimeout > 0 && s.notWritableSince != 0 && now-s.notWritableSince >= int64(cfg.NotWritableTimeout) {
		s.sl.stuckCloses.Add(1)
		s.srv.log.Debug().Str("remote", addrString(s.c)).Int("queued", s.c.OutboundBuffered()).
			Dur("not_writable_timeout", cfg.NotWritableTimeout).Msg("subscriber aborted: not writable")
		s.c.Abort()
		return
	}
	if s.flushAt != 0 && now >= s.flushAt {
		s.flush()
	}
	if cfg.Heartbeat > 0 && s.lt != nil && now-s.lastWrite >= int64(cfg.Heartbeat) {
		s.heartbeat(now)
	}
	s.rearm()
}

// deadline returns the subscriber's earliest deadline, or 0 for none.
func (s *subscriber) deadline() int64 {
	cfg := &s.srv.cfg
	var d int64
	earliest := func(t int64) {
		if d == 0 || t < d {
			d = t
		}
	}
	if s.flushAt != 0 {
		earliest(s.flushAt)
	}
	// A heartbeat due while the subscriber is not writable would only find
	// output queued: the next look at it (recheck) sees the drain first.
	if cfg.Heartbeat > 0 && s.lt != nil && (s.notWritableSince == 0 || s.recheckAt == 0) {
		earliest(s.lastWrite + int64(cfg.Heartbeat))
	}
	if cfg.ReadIdle > 0 && (s.kind == kindPending || s.kind == kindTCP) {
		earliest(s.lastRead + int64(cfg.ReadIdle))
	}
	if cfg.NotWritableTimeout > 0 && s.notWritableSince != 0 {
		earliest(s.notWritableSince + int64(cfg.NotWritableTimeout))
	}
	if s.recheckAt != 0 {
		earliest(s.recheckAt)
	}
	return d
}

// rearm sets the timer to the earliest deadline.
func (s *subscriber) rearm() {
	l := s.c.Loop()
	if d := s.deadline(); d != 0 && !s.c.Closing() {
		l.ScheduleAt(&s.timer, d)
	} else {
		l.Stop(&s.timer)
	}
}

// armBy makes the timer fire no later than when.
func (s *subscriber) armBy(when int64) {
	if !s.timer.Armed() || when < s.timer.When() {
		s.c.Loop().ScheduleAt(&s.timer, when)
	}
}
