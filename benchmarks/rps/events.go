package rps

// This file holds the generator's gnet event handlers: a client put on
// its loop when it connects, its requests failed when it closes, and every
// response checked against its request as it arrives.

import (
	"github.com/panjf2000/gnet/v2"
)

// OnOpen implements gnet.EventHandler: it puts the client on its loop and,
// once the run has started (a reconnect), fills its pipeline.
func (g *generator) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	cs := c.Context().(*clientState)
	r := cs.r
	r.open.Add(1)
	ls := g.loopOf(c)
	cs.conn, cs.loop, cs.timedOut = c, ls, false
	cs.slot = len(ls.clients)
	ls.clients = append(ls.clients, cs)
	if r.closing.Load() {
		return nil, gnet.Close
	}
	if !r.started.Load() {
		return nil, gnet.None
	}
	return cs.addRequests(g.cfg.Pipeline, r.now()), gnet.None
}

// OnClose implements gnet.EventHandler: requests still in flight fail
// (as timeouts if the connection was closed for one), and a client with
// requests left reconnects.
func (g *generator) OnClose(c gnet.Conn, err error) gnet.Action {
	cs := c.Context().(*clientState)
	r := cs.r
	r.open.Add(-1)
	ls := cs.loop
	last := len(ls.clients) - 1
	ls.clients[cs.slot] = ls.clients[last]
	ls.clients[cs.slot].slot = cs.slot
	ls.clients[last] = nil
	ls.clients = ls.clients[:last]
	if cs.finished || r.closing.Load() {
		return gnet.None
	}
	if cs.inflight > 0 {
		if cs.timedOut {
			cs.timeouts += int64(cs.inflight)
		} else {
			cs.errors += int64(cs.inflight)
			g.log.Debug().Err(err).Int("client", cs.id).Int("in_flight", cs.inflight).Msg("connection closed with requests in flight")
		}
		cs.dropInFlight()
	}
	if cs.completed >= g.cfg.Payloads {
		cs.finish(r.now())
		return gnet.None
	}
	r.redial <- cs // never blocks: capacity Clients, one pending redial per client
	return gnet.None
}

// OnTraffic implements gnet.EventHandler: it checks every whole response
// against its request, records its latency, and sends the next request for
// each, in one write.
//
// A correct response is byte for byte its request's frame, so the whole
// responses are compared with the frames of the requests in flight, all at
// once; from the first that differs, and for a partial frame, responses are
// decoded and classified one by one (payloads.check).
func (g *generator) OnTraffic(c gnet.Conn) gnet.Action {
	cs := c.Context().(*clientState)
	r := cs.r
	buf, _ := c.Peek(-1)
	now := r.now()
	lat := latencies{hist: r.hists[cs.loop.index], now: now}
	fs := cs.p.frameSize
	whole := min(len(buf)/fs, cs.inflight)
	matched := whole
	if string(buf[:whole*fs]) != string(cs.win[cs.winOff:cs.winOff+whole*fs]) {
		matched = 0
		for matched < whole && string(buf[matched*fs:(matched+1)*fs]) == string(cs.win[cs.winOff+matched*fs:cs.winOff+(matched+1)*fs]) {
			matched++
		}
	}
	for range matched {
		lat.add(cs.settle())
	}
	lat.flush()
	cs.successes += int64(matched)
	consumed, answered := matched*fs, matched
	f := g.cfg.Format
	hl := f.HeaderLen()
	broken := false
	for consumed < len(buf) {
		h, n, err := f.Decode(buf[consumed:])
		if err != nil {
			g.log.Debug().Err(err).Int("client", cs.id).Msg("undecodable response")
			broken = true
			break
		}
		if n == 0 || consumed+n > len(buf) {
			break
		}
		if cs.inflight == 0 {
			g.log.Debug().Int("client", cs.id).Msg("response without a request in flight")
			broken = true
			break
		}
		seq := cs.nextSeq - cs.inflight
		v := cs.p.check(h, buf[consumed+hl:consumed+n], seq)
		consumed += n
		sent := cs.settle()
		switch v {
		case responseOK:
			cs.successes++
			_ = lat.hist.RecordValue(min((now-sent)/1000, maxLatencyMicros))
		case responseBadBody:
			cs.errors++
		case responseBadHeader:
			cs.errors++
			broken = true
		}
		if broken {
			g.log.Debug().Int("client", cs.id).Int("seq", seq).Uint16("type", h.Type).Int("length", h.Length).Msg("response does not match its request")
			break
		}
		answered++
	}
	if consumed > 0 {
		_, _ = c.Discard(consumed) // gnet's Discard(0) would drop everything
	}
	// One new request for each response answered but a broken one, written
	// even when the connection closes next (they count as errors then).
	if out := cs.addRequests(answered, now); len(out) > 0 {
		if _, err := c.Write(out); err != nil {
			g.log.Debug().Err(err).Int("client", cs.id).Msg("writing requests")
		}
	}
	if broken {
		return gnet.Close
	}
	if cs.completed >= g.cfg.Payloads {
		cs.finish(now)
	}
	return gnet.None
}
