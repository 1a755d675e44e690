package push

import (
	"errors"
	"fmt"

	pushproto "github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/reactor"
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
	pendingBytes  int
	undisclosed   int64 // events dropped and not yet reported to the subscriber

	flushAt          int64 // loop clock; 0 when nothing is pending or the window is 0
	lastWrite        int64
	lastRead         int64
	notWritableSince int64 // 0 while under the high watermark

	timer reactor.Timer
}

// subscribeHandler serves the subscribe listener.
type subscribeHandler struct{ srv *Server }

func (h subscribeHandler) OnOpen(c *reactor.Conn) {
	sl := h.srv.subLoopOf(c.Loop())
	s := &subscriber{srv: h.srv, c: c, sl: sl}
	s.timer.F = s.onTimer
	now := c.Loop().Now()
	s.lastRead, s.lastWrite = now, now
	c.Value = s
	sl.pending.Add(1)
	s.rearm()
}

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
}

func (h subscribeHandler) OnTraffic(c *reactor.Conn) {
	s := c.Value.(*subscriber)
	s.lastRead = c.Loop().Now()
	if s.kind != kindPending {
		c.Discard(-1) // liveness only
		return
	}
	buf, _ := c.Peek(-1)
	if k := min(len(buf), len(pushproto.SubscribeVerb)); string(buf[:k]) == pushproto.SubscribeVerb[:k] {
		topic, n, err := pushproto.ParseSubscribe(buf)
		if errors.Is(err, pushproto.ErrIncomplete) {
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
	req, _, err := pushproto.ParseHTTPRequest(buf, s.srv.cfg.MaxHeader)
	if errors.Is(err, pushproto.ErrIncomplete) {
		return
	}
	if err != nil {
		var he *pushproto.HTTPError
		errors.As(err, &he)
		s.refuseHTTP(he)
		return
	}
	if err := s.subscribe([]byte(req.Topic), kindSSE); err != nil {
		s.refuseHTTP(&pushproto.HTTPError{Status: 400, Reason: err.Error()})
		return
	}
	c.Discard(-1)
}

// subscribe registers s for topic and acknowledges it.
func (s *subscriber) subscribe(name []byte, kind subKind) error {
	t, err := s.srv.hub.topicFor(name)
	if err != nil {
		return err
	}
	s.sl.pending.Add(-1)
	s.kind = kind
	s.sl.join(t, s)
	b := s.c.Loop().Batch()
	if kind == kindTCP {
		s.sl.tcpSubs.Add(1)
		f := b.Reserve(pushproto.FrameHeaderLen(len(t.name)) + pushproto.EventHeaderLen)
		pushproto.PutFrameHeader(f, t.name, pushproto.EventHeaderLen)
		pushproto.PutEventHeader(f[pushproto.FrameHeaderLen(len(t.name)):], pushproto.OpSubscribed, 0)
	} else {
		s.sl.sseSubs.Add(1)
		b.Copy([]byte(pushproto.SSEResponseHeader))
	}
	_ = b.WriteTo(s.c)
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

func (s *subscriber) refuseHTTP(he *pushproto.HTTPError) {
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
	_ = s.c.Write(pushproto.AppendHTTPError(nil, he))
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
	s.pendingBytes += d.bytes
	if immediate {
		return
	}
	cfg := &s.srv.cfg
	if s.pendingEvents >= cfg.MaxBatchEvents || s.pendingBytes >= cfg.MaxBatchBytes {
		s.flush()
		return
	}
	if s.flushAt == 0 {
		s.flushAt = s.c.Loop().Now() + int64(cfg.Window)
		s.armBy(s.flushAt)
	}
}

// flush writes the pending events as one batch, or drops them when the
// subscriber's output is past the high watermark.
func (s *subscriber) flush() {
	n := int64(s.pendingEvents)
	s.flushAt = 0
	if n == 0 {
		return
	}
	cnt := &s.sl.counters
	cnt.processed.Add(n)
	now := s.c.Loop().Now()
	if s.c.OutboundBuffered() > s.srv.cfg.HighWatermark {
		cnt.dropped.Add(n)
		s.undisclosed += n
		if s.notWritableSince == 0 {
			s.notWritableSince = now
			s.rearm()
		}
		s.dropPending()
		return
	}
	s.notWritableSince = 0
	b := s.c.Loop().Batch()
	if s.kind == kindTCP {
		appendLegacyBatch(b, s.lt.t.name, s.undisclosed, s.pending, s.pendingBytes)
	} else {
		appendSSEBatch(b, s.undisclosed, s.pending)
	}
	if err := b.WriteTo(s.c); err != nil {
		cnt.failed.Add(n)
	} else {
		cnt.successful.Add(n)
		cnt.batches.Add(1)
		cnt.batchEvents.Add(n)
		cnt.batchSizes[batchBucket(int(n))].Add(1)
		s.undisclosed = 0
		s.lastWrite = now
	}
	s.dropPending()
}

func (s *subscriber) dropPending() {
	clear(s.pending)
	s.pending = s.pending[:0]
	s.pendingEvents, s.pendingBytes = 0, 0
	s.flushAt = 0
}

// heartbeat writes a heartbeat unless output is already queued.
func (s *subscriber) heartbeat(now int64) {
	s.lastWrite = now
	if s.c.OutboundBuffered() > 0 {
		return
	}
	b := s.c.Loop().Batch()
	if s.kind == kindTCP {
		name := s.lt.t.name
		f := b.Reserve(pushproto.FrameHeaderLen(len(name)) + pushproto.EventHeaderLen)
		pushproto.PutFrameHeader(f, name, pushproto.EventHeaderLen)
		pushproto.PutEventHeader(f[pushproto.FrameHeaderLen(len(name)):], pushproto.OpHeartbeat, 0)
	} else {
		b.Copy(ssePing)
	}
	if b.WriteTo(s.c) == nil {
		s.sl.heartbeats.Add(1)
	}
}

var ssePing = []byte(pushproto.SSEPing)

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
	if cfg.NotWritableTimeout > 0 && s.notWritableSince != 0 {
		if s.c.OutboundBuffered() <= cfg.HighWatermark {
			s.notWritableSince = 0
		} else if now-s.notWritableSince >= int64(cfg.NotWritableTimeout) {
			s.sl.stuckCloses.Add(1)
			s.srv.log.Debug().Str("remote", addrString(s.c)).Int("queued", s.c.OutboundBuffered()).Msg("subscriber aborted: not writable")
			s.c.Abort()
			return
		}
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
	if cfg.Heartbeat > 0 && s.lt != nil {
		earliest(s.lastWrite + int64(cfg.Heartbeat))
	}
	if cfg.ReadIdle > 0 && (s.kind == kindPending || s.kind == kindTCP) {
		earliest(s.lastRead + int64(cfg.ReadIdle))
	}
	if cfg.NotWritableTimeout > 0 && s.notWritableSince != 0 {
		earliest(s.notWritableSince + int64(cfg.NotWritableTimeout))
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
