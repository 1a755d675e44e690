package proxy

import (
	"context"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/reasons"
	"github.com/tidegate/tidegate/session/proxy/status"
)

// Status pings: the proxy answers them for the hosts it routes, from a
// cache per group (session/proxy/status describes how); this file is the
// sessions' side of it.

// groupStatus is a group's status answers: its cache and its offline answer.
type groupStatus = status.Group[*statusWaiter]

// statusWaiter is a session as a refresh it waits for sees it.
type statusWaiter session

// Loop is the session's loop, where Ready runs.
func (w *statusWaiter) Loop() *reactor.Loop { return w.client.Loop() }

// Ready goes on with the session's status ping (statusReady).
func (w *statusWaiter) Ready(e status.Entry) { (*session)(w).statusReady(e) }

// startRefresh refreshes g's cached status in the background and hands the
// result to the sessions waiting for it.
func (p *Proxy) startRefresh(gen *generation, g *group) {
	g.status.Refresh(&p.refresher, gen.router.now(), func(ctx context.Context) status.Entry {
		var up []status.Backend
		for _, b := range g.backends {
			if b.Up() {
				up = append(up, status.Backend{Addr: b.addr, Weight: b.weight})
			}
		}
		return p.refresher.Fetch(ctx, &p.log, gen.cfg.Status, g.name, up, p.networkPlayers(gen), gen.router.now())
	})
}

// serveCachedStatus answers the status ping of a routed session from its
// group's cache; the handshake has been consumed. Without a fresh entry
// the session waits for a refresh, and statusReady goes on.
func (s *session) serveCachedStatus() {
	s.state = stLocalStatus
	s.lookupStatus()
	s.serveLocalStatus()
}

// lookupStatus sets the session's reply from its group's cache, or queues
// it for a refresh (starting one if none is in flight).
func (s *session) lookupStatus() {
	e, fresh, start := s.group.status.Cache.Lookup((*statusWaiter)(s), s.gen.router.now())
	if start {
		s.p.startRefresh(s.gen, s.group)
	}
	if fresh {
		s.p.loopOf(s.client).counters.statusCached.Add(1)
		s.useEntry(e)
	}
}

// useEntry makes a cache entry the session's reply: the status, or the
// offline answer when the refresh failed (counted as backend_unavailable).
func (s *session) useEntry(e status.Entry) {
	if e.Reply != nil {
		s.pre.reply = e.Reply
		return
	}
	s.refused(reasons.BackendUnavailable)
	s.pre.reply = s.group.status.Offline
}

// statusReady runs on the session's loop when the refresh it waited for is
// done.
func (s *session) statusReady(e status.Entry) {
	// The state first: a session no longer answering a ping may be relaying, without pre.
	if (s.state != stLocalStatus && s.state != stLegacyPing) || s.client.Closing() || s.pre.reply != nil {
		return // it left, or timed out, meanwhile
	}
	s.p.loopOf(s.client).counters.statusWaited.Add(1)
	s.useEntry(e)
	if s.state == stLegacyPing {
		s.answerLegacy()
		return
	}
	s.serveLocalStatus()
}

// handshakeDeadline is when the handshake timeout of the session ends, on
// the loop clock.
func (s *session) handshakeDeadline() int64 {
	return s.lastActive + int64(s.gen.cfg.Limits.HandshakeTimeout)
}

// readLegacyPing handles input that starts with 0xFE, a pre-1.7 server list
// ping; it reports false when the input is not one after all (a modern
// frame whose length starts with 0xFE), for the handshake to go on.
func (s *session) readLegacyPing(buf []byte) bool {
	l := s.client.Loop()
	switch step, p, err := status.ReadLegacy(buf, false); step {
	case status.LegacyModern:
		if s.state == stLegacyPing { // it waited for more: back to the handshake timeout
			s.state = stHandshake
			l.ScheduleAt(&s.timer, s.handshakeDeadline())
		}
		return false
	case status.LegacyBad:
		s.reject(reasons.BadHandshake, err)
	case status.LegacyMore: // wait a moment for more (onTimer decides, see legacyWaitOver)
		if s.state != stLegacyPing {
			s.state = stLegacyPing
			if dl := s.handshakeDeadline(); dl-l.Now() < int64(status.LegacyPingWait) {
				l.ScheduleAt(&s.timer, dl)
			} else {
				l.Schedule(&s.timer, status.LegacyPingWait) // from the real clock: the loop's may be a tick behind
			}
		}
	default:
		s.answerLegacyPing(p)
	}
	return true
}

// legacyWaitOver runs when a legacy ping waited status.LegacyPingWait for
// more input: a Beta or 1.4 ping is answered as what it is; a 1.6 ping
// still arriving gets until the handshake timeout.
func (s *session) legacyWaitOver() {
	buf, _ := s.client.Peek(-1)
	switch step, p, err := status.ReadLegacy(buf, true); step {
	case status.LegacyBad: // not reached: the input was parsed as it is now
		s.reject(reasons.BadHandshake, err)
	case status.LegacyWhole:
		s.answerLegacyPing(p)
	default:
		s.client.Loop().ScheduleAt(&s.timer, s.handshakeDeadline())
	}
}

// answerLegacyPing answers a whole legacy ping with the status of the group
// its host routes to (1.6 pings name the host; older ones go to the default
// group): from the cache, or the offline answer. The answer is a kick
// packet, after which the connection closes.
func (s *session) answerLegacyPing(p mc.LegacyPing) {
	c := s.client
	c.Discard(-1)
	s.state = stLegacyPing
	s.pre.legacy = p.Kind
	s.protocol = int32(p.Protocol)
	c.Loop().ScheduleAt(&s.timer, s.handshakeDeadline()) // if it waited for more input
	ls := s.p.loopOf(c)
	ls.counters.rejected[reasons.LegacyPing].Add(1)
	norm := mc.AppendNormalizedHost(nil, []byte(p.Host))
	s.host = string(norm)
	s.group = nil
	if rt := s.gen.router.route(norm); rt != nil {
		s.pre.route, s.group = rt, rt.group
	}
	ev := s.p.log.Debug().Str("remote", c.RemoteAddr().String()).Stringer("kind", p.Kind).Str("host", s.host).Uint8("protocol", p.Protocol)
	switch {
	case s.group == nil:
		ev.Msg("legacy ping for a host without a route")
		s.pre.reply = s.gen.unknownHost
	case !s.group.anyUp():
		ev.Str("group", s.group.name).Msg("legacy ping answered locally: server offline")
		s.refused(reasons.NoHealthyBackend)
		s.pre.reply = s.group.status.Offline
	default:
		ev.Str("group", s.group.name).Msg("legacy ping")
		s.lookupStatus()
		if s.pre.reply == nil {
			return // answered when the refresh is done (statusReady)
		}
	}
	s.answerLegacy()
}

// answerLegacy sends the legacy kick packet with the session's reply and closes.
func (s *session) answerLegacy() {
	c := s.client
	_ = c.Write(mc.AppendLegacyKick(nil, s.pre.legacy, s.pre.reply.LegacyStatus(s.protocol)))
	s.state = stDone
	c.Close()
}

// legacyReadEOF handles a client that half-closed while its legacy ping
// waited for more input: nothing more can come, so it is answered as it is.
// A ping waiting for a refresh keeps waiting; its answer can still be sent.
func (s *session) legacyReadEOF() {
	if s.pre.legacy != 0 {
		return
	}
	buf, _ := s.client.Peek(-1)
	if step, p, _ := status.ReadLegacy(buf, true); step == status.LegacyWhole {
		s.answerLegacyPing(p)
		return
	}
	s.state = stDone
	s.client.Close()
}

// noHealthyBackend answers a session whose group has no backend up: a
// status ping gets the proxy's own offline answer, a login the offline
// disconnect message, a raw connection a close.
func (s *session) noHealthyBackend() {
	if s.raw || s.pre.handshake.NextState != mc.NextStateStatus {
		s.reject(reasons.NoHealthyBackend, nil)
		return
	}
	s.refused(reasons.NoHealthyBackend)
	s.p.log.Info().Str("remote", s.remoteAddr()).Str("reason", reasons.NoHealthyBackend.String()).
		Str("host", s.host).Str("group", s.group.name).Msg("status answered locally: server offline")
	s.serveOfflineStatus()
}

// serveOfflineStatus answers the status ping waiting in the client's input
// with the group's offline answer.
func (s *session) serveOfflineStatus() {
	s.client.Discard(s.pre.hsLen)
	s.state = stLocalStatus
	s.pre.reply = s.group.status.Offline
	s.serveLocalStatus()
}

// serveLocalStatus answers a status ping itself, with s.reply: a group's
// cached status, its offline answer, or the answer for a host that has no
// route. While s.reply is nil (a refresh is awaited) a Status Request stays
// unread; statusReady calls this again.
func (s *session) serveLocalStatus() {
	c := s.client
	if s.state != stLocalStatus {
		return
	}
	buf, _ := c.Peek(-1)
	out, consumed, pinged, err := status.Answer(nil, buf, s.pre.reply, s.protocol)
	switch {
	case err != nil:
		s.reject(reasons.BadFrame, err)
		return
	case pinged:
		_ = c.Write(out)
		c.Discard(-1)
		s.state = stDone
		c.Close()
		return
	}
	if len(out) > 0 {
		_ = c.Write(out)
	}
	c.Discard(consumed)
	if c.InboundBuffered() > 1024 {
		s.reject(reasons.PrerouteCap, nil)
	}
}
