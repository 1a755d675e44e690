package pushserver

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/reactor"
)

// publisher is one publisher connection.
type publisher struct {
	srv    *Server
	c      *reactor.Conn
	cnt    *counters
	closed bool // on the publisher's loop only

	// outbox[i] collects what the current read routes to subscriber loop i.
	outbox   [][]routed
	outLoops []*subLoop

	inflight atomic.Int32 // hand-offs queued and not yet run
	waiting  atomic.Bool  // paused until inflight falls to half of MaxInflight
	resume   func()
}

// publishHandler serves the publish listener.
type publishHandler struct{ srv *Server }

func (h publishHandler) OnOpen(c *reactor.Conn) {
	s := h.srv
	p := &publisher{srv: s, c: c, cnt: s.pubCounters(c.Loop()), outbox: make([][]routed, len(s.subLoops))}
	p.resume = func() {
		if !p.closed {
			p.c.ResumeRead()
		}
	}
	c.Value = p
	p.cnt.publishers.Add(1)
}

func (h publishHandler) OnClose(c *reactor.Conn, _ error) {
	p := c.Value.(*publisher)
	p.closed = true
	p.cnt.publishers.Add(-1)
}

func (h publishHandler) OnTraffic(c *reactor.Conn) {
	p := c.Value.(*publisher)
	buf, _ := c.Peek(-1)
	f := p.srv.cfg.Format
	hl := f.HeaderLen()
	off := 0
	for off < len(buf) {
		hdr, n, err := f.Decode(buf[off:])
		if err != nil {
			p.reject(rejectTooLarge, err)
			break
		}
		if n == 0 || off+n > len(buf) {
			break
		}
		if err := f.CheckRequest(hdr); err != nil {
			p.reject(rejectErrorType, err)
			break
		}
		if hdr.Type != push.TypePublish {
			p.reject(rejectUnknownType, fmt.Errorf("push: TLV message type %d, want %d (publish)", hdr.Type, push.TypePublish))
			break
		}
		pub, err := push.ParsePublish(buf[off+hl:off+n], p.srv.cfg.Limits)
		if err != nil {
			var pe *push.PublishError
			errors.As(err, &pe)
			p.reject(int(pe.Reason), err)
			break
		}
		p.route(&pub)
		off += n
	}
	if c.Closing() {
		c.Discard(-1)
	} else {
		c.Discard(off)
	}
	p.handOff()
}

// route stores pub's events once and queues them for every loop with
// subscribers to its topic.
func (p *publisher) route(pub *push.Publish) {
	p.cnt.publishFrames.Add(1)
	p.cnt.publishedEvents.Add(int64(pub.Count))
	t := p.srv.hub.lookup(pub.Topic)
	if t == nil {
		p.cnt.unroutedEvents.Add(int64(pub.Count))
		return
	}
	lts := *t.loops.Load()
	if len(lts) == 0 {
		p.cnt.unroutedEvents.Add(int64(pub.Count))
		return
	}
	d := newDelivery(pub)
	for _, lt := range lts {
		i := lt.sl.loop.Index()
		if len(p.outbox[i]) == 0 {
			p.outLoops = append(p.outLoops, lt.sl)
		}
		p.outbox[i] = append(p.outbox[i], routed{lt: lt, d: d})
	}
}

// handOff gives each subscriber loop what this read routed to it, with one
// Execute per loop, and pauses the publisher when too many are queued.
func (p *publisher) handOff() {
	for k, sl := range p.outLoops {
		i := sl.loop.Index()
		rs := p.outbox[i]
		p.outbox[i] = nil
		p.outLoops[k] = nil
		p.inflight.Add(1)
		srv := p.srv
		err := sl.loop.Execute(func() {
			sl.deliver(srv, rs)
			p.done()
		})
		if err != nil {
			p.cnt.handoffErrors.Add(1)
			p.done()
		}
	}
	p.outLoops = p.outLoops[:0]
	maxIn := int32(p.srv.cfg.MaxInflight)
	if p.inflight.Load() < maxIn || p.closed || p.c.Closing() {
		return
	}
	p.cnt.publisherPauses.Add(1)
	p.c.PauseRead()
	p.waiting.Store(true)
	if p.inflight.Load() <= maxIn/2 && p.waiting.CompareAndSwap(true, false) {
		p.c.ResumeRead()
	}
}

// done runs when a hand-off has run (on a subscriber loop) or failed.
func (p *publisher) done() {
	if p.inflight.Add(-1) <= int32(p.srv.cfg.MaxInflight/2) && p.waiting.CompareAndSwap(true, false) {
		if err := p.c.Loop().Execute(p.resume); err != nil {
			p.cnt.handoffErrors.Add(1)
		}
	}
}

// reject answers a bad frame with a TLV error frame and closes the connection.
func (p *publisher) reject(reason int, err error) {
	p.cnt.rejects[reason].Add(1)
	p.srv.log.Debug().Err(err).Str("remote", addrString(p.c)).Str("reason", rejectName(reason)).Msg("publisher frame rejected")
	_ = p.c.Write(p.srv.cfg.Format.AppendError(nil, err.Error()))
	p.c.Close()
}

func addrString(c *reactor.Conn) string {
	if a := c.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}
