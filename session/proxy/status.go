package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/config"
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
//   - When the group has no backend up (health.go), pings get the offline
//     answer (status.offline) at once.
//
// The Ping that follows is answered with its own payload by the proxy. A
// cached status keeps the backend's JSON as it was, version object included,
// unless status.protocol is client (each client gets its own protocol
// number) or sum_online replaces players.online.

// legacyPingWait is how long a legacy ping whose input stopped at FE or
// FE 01 waits for the rest of a 1.6 ping (1.6 clients write it a few bytes
// at a time) before it is answered as a Beta or 1.4 ping.
const legacyPingWait = 50 * time.Millisecond

// statusReply is one status answer: its JSON, split around the number of
// version.protocol, and what a legacy ping is told.
type statusReply struct {
	head, tail []byte // the JSON is head, the protocol number, tail
	client     bool   // the protocol number is each client's own
	frame      []byte // the whole Status Response, when !client
	legacy     mc.LegacyStatus
}

// json returns the status JSON with protocol v.
func (r *statusReply) json(v int32) []byte {
	js := make([]byte, 0, len(r.head)+11+len(r.tail))
	js = append(js, r.head...)
	js = strconv.AppendInt(js, int64(v), 10)
	return append(js, r.tail...)
}

// appendResponse appends the Status Response for a client of protocol v to dst.
func (r *statusReply) appendResponse(dst []byte, v int32) []byte {
	if !r.client {
		return append(dst, r.frame...)
	}
	return mc.AppendStatusResponse(dst, r.json(v))
}

// legacyStatus returns what a legacy ping from a client of protocol v (0
// when the ping does not say, as before 1.6) is told.
func (r *statusReply) legacyStatus(v int32) mc.LegacyStatus {
	st := r.legacy
	if r.client && v != 0 {
		st.Protocol = v
	}
	return st
}

// offlineReply is the proxy's own answer, from status.offline, with text (§
// codes or a chat component in JSON) as its description.
func offlineReply(o config.OfflineStatusConfig, text string) *statusReply {
	head := append([]byte(`{"description":`), chatJSON(text)...)
	if uri := o.FaviconURI(); uri != "" {
		head = append(head, `,"favicon":"`...)
		head = append(head, uri...) // base64 and a data: prefix: nothing to escape
		head = append(head, '"')
	}
	head = fmt.Appendf(head, `,"players":{"max":%d,"online":%d},"version":{"name":`, o.Max, o.Online)
	name, _ := json.Marshal(o.VersionName) // a string always marshals
	head = append(append(head, name...), `,"protocol":`...)
	r := &statusReply{
		head: head, tail: []byte("}}"), client: o.Protocol == 0,
		legacy: mc.LegacyStatus{Protocol: int32(o.Protocol), Version: o.VersionName, MOTD: legacyText(text),
			Online: int64(o.Online), Max: int64(o.Max)},
	}
	if !r.client {
		r.frame = mc.AppendStatusResponse(nil, r.json(int32(o.Protocol)))
	}
	return r
}

// legacyText is a configured text as legacy text: a chat component in JSON
// rendered with § codes, anything else as it is.
func legacyText(text string) string {
	if !config.IsChatJSON(text) {
		return text
	}
	s, err := mc.LegacyText([]byte(text))
	if err != nil {
		return text // refused by config.Config.check; not reached
	}
	return s
}

// backendReply builds the answer from a backend's status JSON. online, when
// not negative, replaces players.online.
func backendReply(js []byte, online int64, mode config.StatusProtocol) (*statusReply, error) {
	return playersReply(js, &statusPlayers{online: online}, mode)
}

// playersReply is backendReply with the network's players (cluster.go):
// pl.online, when not negative, replaces players.online and pl.sample, when
// not nil, players.sample.
func playersReply(js []byte, pl *statusPlayers, mode config.StatusProtocol) (*statusReply, error) {
	online := pl.online
	info, err := mc.ParseStatusJSON(js)
	if err != nil {
		return nil, err
	}
	r := &statusReply{
		client: mode == config.StatusProtocolClient,
		legacy: mc.LegacyStatus{Protocol: info.Protocol, Version: info.VersionName, Online: info.Online, Max: info.Max},
	}
	if len(info.Description) > 0 {
		if text, err := mc.LegacyText(info.Description); err == nil {
			r.legacy.MOTD = text
		}
	}
	if online >= 0 {
		r.legacy.Online = online
	}
	if !r.client && online < 0 && pl.sample == nil {
		r.frame = mc.AppendStatusResponse(nil, js) // as the backend wrote it
		return r, nil
	}
	if r.head, r.tail, err = mc.SplitStatusJSONPlayers(js, online, pl.sample); err != nil {
		return nil, err
	}
	if !r.client {
		r.frame = mc.AppendStatusResponse(nil, r.json(info.Protocol))
		r.head, r.tail = nil, nil
	}
	return r, nil
}

// groupStatus is a group's status answers: its cache and its offline answer.
type groupStatus struct {
	offline *statusReply
	cache   statusCache
}

// newGroupStatus builds the status state of a group configured as gc.
// Its offline description is the group's offline_message, else
// status.offline.motd, else health.offline_message.
func newGroupStatus(cfg *config.Config, gc config.GroupConfig) *groupStatus {
	text := gc.OfflineMessage
	if text == "" {
		text = cfg.Status.Offline.MOTD
	}
	if text == "" {
		text = cfg.Probes.OfflineMessage
	}
	return &groupStatus{offline: offlineReply(cfg.Status.Offline, text)}
}

// unknownHostText is the description of the proxy's answer for a host
// without a route.
const unknownHostText = "Unknown host"

// statusEntry is one refresh's result.
type statusEntry struct {
	reply   *statusReply // nil when the refresh failed
	expires int64        // router clock
}

// statusCache is a group's cached status, shared by all loops.
type statusCache struct {
	cur      atomic.Pointer[statusEntry] // read without the lock on the hot path
	mu       sync.Mutex
	inflight bool
	waiters  []*session
}

// lookup returns the cached entry when it is still fresh at now. Otherwise
// it queues s for the refresh in flight, and reports start when there is
// none: the caller must start it.
func (c *statusCache) lookup(s *session, now int64) (e statusEntry, fresh, start bool) {
	if e := c.cur.Load(); e != nil && e.expires > now {
		return *e, true, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.cur.Load(); e != nil && e.expires > now {
		return *e, true, false
	}
	c.waiters = append(c.waiters, s)
	if c.inflight {
		return statusEntry{}, false, false
	}
	c.inflight = true
	return statusEntry{}, false, true
}

// complete stores a refresh's result and returns the sessions that waited for it.
func (c *statusCache) complete(e statusEntry) []*session {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur.Store(&e)
	c.inflight = false
	w := c.waiters
	c.waiters = nil
	return w
}

// statusRefresher runs the refreshes, one goroutine per refresh in flight
// (at most one per group), and lets Stop wait for them.
type statusRefresher struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed bool

	ok, failed atomic.Int64
}

// spawn runs f on a new goroutine; it reports false once stop has been called.
func (r *statusRefresher) spawn(f func(ctx context.Context)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	if r.ctx == nil {
		r.ctx, r.cancel = context.WithCancel(context.Background())
	}
	ctx := r.ctx
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f(ctx)
	}()
	return true
}

// stop ends the refreshes for good: those in flight are cancelled, and it
// waits for them until ctx ends.
func (r *statusRefresher) stop(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("proxy: status refreshes did not stop: %w", ctx.Err())
	}
}

// startRefresh refreshes g's cached status in the background and hands the
// result to the sessions waiting for it.
func (p *Proxy) startRefresh(gen *generation, g *group) {
	ok := p.refresher.spawn(func(ctx context.Context) {
		p.finishRefresh(g, p.refresh(ctx, gen, g))
	})
	if !ok { // stopping: the waiters get the offline answer
		p.finishRefresh(g, statusEntry{expires: gen.router.now()})
	}
}

// refresh fetches g's status and returns the entry to cache.
func (p *Proxy) refresh(ctx context.Context, gen *generation, g *group) statusEntry {
	st := gen.cfg.Status
	start := time.Now()
	reply, err := fetchGroupStatus(ctx, st, g, p.networkPlayers(gen))
	e := statusEntry{reply: reply, expires: gen.router.now() + int64(st.CacheTTL)}
	if err != nil {
		p.refresher.failed.Add(1)
		if ctx.Err() == nil {
			p.log.Warn().Str("group", g.name).Err(err).Dur("cache_ttl", st.CacheTTL).
				Msg("status refresh failed: pings get the offline answer until the next refresh")
		}
		return e
	}
	p.refresher.ok.Add(1)
	p.log.Debug().Str("group", g.name).Dur("took", time.Since(start)).Msg("status refreshed")
	return e
}

// finishRefresh caches e for g and answers each session that waited, on its loop.
func (p *Proxy) finishRefresh(g *group, e statusEntry) {
	byLoop := map[*reactor.Loop][]*session{}
	for _, s := range g.status.cache.complete(e) {
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

// fetchGroupStatus asks the backends of g that are up for their status:
// one, picked by weight (the others in turn if it fails), or with
// st.SumOnline all of them at once, players.online becoming their sum.
//
// With net (the network's players, cluster.go) those replace the backend's,
// and one backend is asked even with st.SumOnline.
func fetchGroupStatus(ctx context.Context, st config.StatusConfig, g *group, net *statusPlayers) (*statusReply, error) {
	var up []*backend
	total := 0
	for _, b := range g.backends {
		if b.state.Load() == stateUp {
			up = append(up, b)
			total += b.weight
		}
	}
	if len(up) == 0 {
		return nil, fmt.Errorf("no backend of group %s is up", g.name)
	}
	if !st.SumOnline || (net != nil && net.online >= 0) {
		pl := net
		if pl == nil {
			pl = &statusPlayers{online: -1}
		}
		first, n := 0, rand.IntN(total)
		for i, b := range up {
			if n < b.weight {
				first = i
				break
			}
			n -= b.weight
		}
		var errs []error
		for i := range up {
			addr := up[(first+i)%len(up)].addr
			js, err := fetchStatus(ctx, addr, st.Timeout)
			if err == nil {
				var r *statusReply
				if r, err = playersReply(js, pl, st.Protocol); err == nil {
					return r, nil
				}
				err = fmt.Errorf("status of %s: %w", addr, err)
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		return nil, errors.Join(errs...)
	}
	type result struct {
		js     []byte
		online int64
		err    error
	}
	res := make([]result, len(up))
	var wg sync.WaitGroup
	for i, b := range up {
		wg.Add(1)
		go func() {
			defer wg.Done()
			js, err := fetchStatus(ctx, b.addr, st.Timeout)
			if err != nil {
				res[i].err = err
				return
			}
			info, err := mc.ParseStatusJSON(js)
			if err != nil {
				res[i].err = fmt.Errorf("status of %s: %w", b.addr, err)
				return
			}
			res[i] = result{js: js, online: info.Online}
		}()
	}
	wg.Wait()
	var errs []error
	primary, sum := -1, int64(0)
	for i, r := range res {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		sum += r.online
		if primary < 0 {
			primary = i
		}
	}
	if primary < 0 {
		return nil, errors.Join(errs...)
	}
	pl := &statusPlayers{online: sum}
	if net != nil {
		pl.sample = net.sample
	}
	return playersReply(res[primary].js, pl, st.Protocol)
}

// fetchStatus does a status exchange with the backend at addr within timeout
// and returns its JSON.
func fetchStatus(ctx context.Context, addr string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if strings.Contains(err.Error(), addr) { // "dial tcp ADDR: ..." names it
			return nil, fmt.Errorf("status: %w", err)
		}
		return nil, fmt.Errorf("status of %s: %w", addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() }) // Proxy.Stop need not wait for the timeout
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	js, err := statusExchange(conn, addr)
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", addr, err)
	}
	return js, nil
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
	e, fresh, start := s.group.status.cache.lookup(s, s.gen.router.now())
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
func (s *session) useEntry(e statusEntry) {
	if e.reply != nil {
		s.pre.reply = e.reply
		return
	}
	s.refused(reasonBackendUnavailable)
	s.pre.reply = s.group.status.offline
}

// statusReady runs on the session's loop when the refresh it waited for is
// done.
func (s *session) statusReady(e statusEntry) {
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
		s.reject(reasonBadHandshake, err)
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
		s.reject(reasonBadHandshake, err)
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
	ls.counters.rejected[reasonLegacyPing].Add(1)
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
		s.refused(reasonNoHealthyBackend)
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
	_ = c.Write(mc.AppendLegacyKick(nil, s.pre.legacy, s.pre.reply.legacyStatus(s.protocol)))
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
