package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/reasons"
	"github.com/tidegate/tidegate/session/proxy/status"
)

// Status pings. The proxy answers the status pings for a routed host itself,
// modern (handshake with next state 1, Status Request, Ping) and pre-1.7
// (0xFE, see protocol/mc ParseLegacyPing), from a cache per group:
//
//   - While the group's cached status is younger than status.cache_ttl, a
//     ping is answered from it on its loop; nothing reaches a backend.
//   - Otherwise the ping waits (on its loop, as a callback: no goroutine per
//     connection) for a refresh: a goroutine of the proxy fetches the status
//     of one backend of the group that is up (of each, with sum_online),
//     stores it and hands it to every ping that waited, on its own loop.
//     There is at most one refresh per group in flight; pings arriving
//     meanwhile share it.
//   - A refresh that fails is cached for the TTL too, as the offline answer
//     (so a ping storm at a broken backend costs one fetch per TTL); it
//     changes no backend's health, which connects and active checks decide.
//   - When the group has no backend up (probe.go), pings get the offline
//     answer (status.offline) at once.
//
// The Ping that follows is answered with its own payload by the proxy. A
// cached status keeps the backend's JSON as it was, version object included,
// unless status.protocol is client (each client gets its own protocol
// number) or sum_online replaces players.online.

// legacyPingWait is how long a legacy ping whose input stopped at FE or
// FE 01 waits for the rest of a 1.6 ping (1.6 clients write it a few bytes
// at a time) before it is answered as a Beta or 1.4 ping. A variable only
// so that a test can make it long enough to be sure which side of it a
// piece arrived on.
var legacyPingWait = 50 * time.Millisecond

// groupStatus is a group's status answers: its cache and its offline answer.
type groupStatus struct {
	offline *status.Reply
	cache   status.Cache[*session]
}

// newGroupStatus builds the status state of a group configured as gc,
// whose offline description is config.OfflineMOTD's.
func newGroupStatus(cfg *config.Config, gc config.GroupConfig) *groupStatus {
	return &groupStatus{offline: status.Offline(cfg.Status.Offline, cfg.OfflineMOTD(gc))}
}

// unknownHostText is the description of the proxy's answer for a host
// without a route.
const unknownHostText = "Unknown host"

// startRefresh refreshes g's cached status in the background and hands the
// result to the sessions waiting for it.
func (p *Proxy) startRefresh(gen *generation, g *group) {
	ok := p.refresher.Spawn(func(ctx context.Context) {
		p.finishRefresh(g, p.refresh(ctx, gen, g))
	})
	if !ok { // stopping: the waiters get the offline answer
		p.finishRefresh(g, status.Entry{Expires: gen.router.now()})
	}
}

// refresh fetches g's status and returns the entry to cache.
func (p *Proxy) refresh(ctx context.Context, gen *generation, g *group) status.Entry {
	st := gen.cfg.Status
	start := time.Now()
	var up []status.Backend
	for _, b := range g.backends {
		if b.Up() {
			up = append(up, status.Backend{Addr: b.addr, Weight: b.weight})
		}
	}
	reply, err := status.FetchGroup(ctx, st, g.name, up, p.networkPlayers(gen))
	e := status.Entry{Reply: reply, Expires: gen.router.now() + int64(st.CacheTTL)}
	p.refresher.Counted(err == nil)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn().Str("group", g.name).Err(err).Dur("cache_ttl", st.CacheTTL).
				Msg("status refresh failed: pings get the offline answer until the next refresh")
		}
		return e
	}
	p.log.Debug().Str("group", g.name).Dur("took", time.Since(start)).Msg("status refreshed")
	return e
}

// finishRefresh caches e for g and answers each session that waited, on its loop.
func (p *Proxy) finishRefresh(g *group, e status.Entry) {
	byLoop := map[*reactor.Loop][]*session{}
	for _, s := range g.status.cache.Complete(e) {
		l := s.client.Loop()
		byLoop[l] = append(byLoop[l], s)
	}
	for l, ss := range byLoop {
		// An error means the loop has stopped, and its sessions with it.
		_ = l.Execute(func() {
			for _, s := range ss {
				s.statusReady(e)
			}
		})
	}
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
	e, fresh, start := s.group.status.cache.Lookup(s, s.gen.router.now())
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
	s.pre.reply = s.group.status.offline
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
	c := s.client
	l := c.Loop()
	p, n, err := mc.ParseLegacyPing(buf)
	switch {
	case errors.Is(err, mc.ErrNotLegacyPing):
		if s.state == stLegacyPing { // it waited for more: back to the handshake timeout
			s.state = stHandshake
			l.ScheduleAt(&s.timer, s.handshakeDeadline())
		}
		return false
	case err != nil:
		s.reject(reasons.BadHandshake, err)
		return true
	case n == 0 || (p.Kind != mc.LegacyPing16 && n == len(buf)):
		// Not whole, or perhaps the start of a 1.6 ping: wait a moment
		// for more (onTimer decides, see legacyWaitOver).
		if s.state != stLegacyPing {
			s.state = stLegacyPing
			if dl := s.handshakeDeadline(); dl-l.Now() < int64(legacyPingWait) {
				l.ScheduleAt(&s.timer, dl)
			} else {
				l.Schedule(&s.timer, legacyPingWait) // from the real clock: the loop's may be a tick behind
			}
		}
		return true
	}
	s.answerLegacyPing(p)
	return true
}

// legacyWaitOver runs when a legacy ping waited legacyPingWait for more
// input: a Beta or 1.4 ping is answered as what it is; a 1.6 ping still
// arriving gets until the handshake timeout.
func (s *session) legacyWaitOver() {
	c := s.client
	buf, _ := c.Peek(-1)
	p, n, err := mc.ParseLegacyPing(buf)
	switch {
	case err != nil: // not reached: the input was parsed as it is now
		s.reject(reasons.BadHandshake, err)
	case n > 0:
		s.answerLegacyPing(p)
	default:
		c.Loop().ScheduleAt(&s.timer, s.handshakeDeadline())
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
		s.pre.reply = s.group.status.offline
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
	if p, n, err := mc.ParseLegacyPing(buf); err == nil && n > 0 {
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
	s.pre.reply = s.group.status.offline
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
