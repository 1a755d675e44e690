package proxy

import (
	"context"
	"fmt"
	"time"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/bungeechan"
	"github.com/tidegate/tidegate/session/proxy/inspect"
	"github.com/tidegate/tidegate/session/proxy/kick"
	"github.com/tidegate/tidegate/session/proxy/move"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// Moving players between servers: the session's hooks into
// session/proxy/move, which does the work.

// keepPlayer keeps what a terminated session needs to be moved and, when
// its group has a fallback, inspects its backend's packets for kicks.
func (s *session) keepPlayer() {
	ls := s.p.loopOf(s.client)
	if s.pre != nil && s.pre.term != nil {
		if pl, err := move.NewPlayer(s.pre.term, s.pre.handshake, s.protocol, s.ip); err == nil {
			ls.players.Set(s, pl)
		}
	}
	if s.via &^= viaInspect; kick.Watch(&ls.inspect, s, s.backend, ls.players.Get(s), s.where(), s.username, &ls.counters.kicks, s.p.log) {
		s.via |= viaInspect
	}
	if ls.bungee.Keep(s.p.bungee, &ls.inspect, s, (*moveHost)(s), ls.players.Get(s), bungeechan.Where{Loop: s.client.Loop(), From: s.backend, S2C: &s.s2c, C2S: &s.c2s, Name: s.username,
		Client: s.remoteAddrPort(), Group: s.group.name, On: s.gen.cfg.Groups[s.group.name].BungeeChannelOn()}, &ls.compressor) {
		s.via |= viaInspect
	}
}

// relayInspected relays the backend's input through the inspection.
func (s *session) relayInspected() {
	ls, bc := s.p.loopOf(s.client), s.backend
	out := inspect.Out{Client: s.client, Ciphers: s.ciphers(), S2C: &s.s2c, Bytes: &ls.counters.bytesS2C, Frames: &ls.counters.framesS2C, Reframe: ls.reframes.S2C(s)}
	u, err := ls.inspect.Relay(s, bc, &out, &ls.compressor)
	s.lastActive = bc.Loop().Now()
	bc.Backpressure()
	if kp, ok := u.(*kick.Player); ok {
		kp.Kicked((*moveHost)(s), s.where(), time.Now())
	} else if r := inspect.Reason(err); err != nil {
		ls.counters.ended[r].Add(1)
		s.p.log.Warn().Str("remote", s.remoteAddr()).Str("user", s.username).Str("backend", s.target.addr).Bool("from_client", false).Str("reason", r.String()).Err(err).Msg(inspect.EndMessage(r))
		s.closeBoth()
	}
}

// where is the session's group, backend and fallbacks.
func (s *session) where() kick.Where {
	return kick.Where{Group: s.group.name, Backend: s.target.addr, Fallback: s.gen.cfg.Groups[s.group.name].Fallback}
}

// A moveHost is the session as its kicks see it too (kick.Host).
func (h *moveHost) CloseBackend() { h.backend.Close() }
func (h *moveHost) Moving() bool  { return h.state == stMoving }
func (h *moveHost) SendTo(g string, notice []byte) error {
	return (*session)(h).sendTo(g, "", notice, nil)
}

// A moveHost is the session as the BungeeCord channel sees it too (bungeechan.Session).
func (h *moveHost) WriteClient(frame []byte)  { (*session)(h).sendClient(frame) }
func (h *moveHost) WriteBackend(frame []byte) { _ = h.backend.Write(frame) }
func (h *moveHost) Relaying() bool            { return h.state == stRelay && !h.clientEOF && !h.backendEOF }

// Kick sends the client packet, in its framing, and ends the session.
func (h *moveHost) Kick(packet []byte) {
	s, ls := (*session)(h), h.p.loopOf(h.client)
	s.sendClient(ls.compressor.AppendFrame(nil, packet, ls.players.Get(s).Threshold))
	s.leaveBackend()
	s.closeBoth()
}

// moving returns the session's move in flight (state stMoving).
func (s *session) moving() *move.Move { return s.p.loopOf(s.client).players.Get(s).Move }

// sendTo starts moving the session to group, or to the backend at addr,
// with notice in the chat first (if set); done gets the outcome.
func (s *session) sendTo(group, addr string, notice []byte, done func(error)) error {
	ls := s.p.loopOf(s.client)
	pl := ls.players.Get(s)
	if err := move.Check(move.Session{Terminated: s.group != nil && s.group.login != nil, Protocol: s.protocol, Player: pl,
		Relaying: s.state == stRelay && !s.clientEOF && !s.backendEOF, Framed: !s.c2s.Broken() && !s.s2c.Broken(), Reframed: s.via&viaReframe != 0}); err != nil {
		return err
	}
	g, b, err := s.moveTarget(group, addr)
	if err != nil {
		return err
	}
	pair := move.Pair{Client: s.client, Ciphers: s.ciphers(), C2S: &s.c2s, S2C: &s.s2c, Compressor: &ls.compressor,
		BytesC2S: &ls.counters.bytesC2S, BytesS2C: &ls.counters.bytesS2C, After: &s.p.backendSide}
	if old := s.backend; old.Opened() && !old.Closing() {
		pair.Old = old
	}
	s.state = stMoving
	s.client.Loop().Stop(&s.timer) // the move has its own
	move.Start((*moveHost)(s), pair, pl, move.Target{Group: g.name, Addr: b.addr, Settings: g.login, Bungee: g.bungee, Notice: notice, Done: done},
		s.gen.cfg.Limits.ConnectTimeout+s.gen.cfg.Limits.HandshakeTimeout)
	return nil
}

// moveTarget resolves a move's target: a backend up of group, or the
// backend at addr, of a group whose logins the proxy completes.
func (s *session) moveTarget(group, addr string) (*group, *backend, error) {
	r := s.gen.router
	if g := r.groups[group]; g != nil && g.login != nil {
		if b, probe := g.pick(&s.p.loopOf(s.client).rnd, s.client.Loop().Index(), r.now(), r.lease); b != nil {
			if probe {
				b.DropProbe(r.now()) // a move does not decide a backend's health
			}
			return g, b, nil
		}
		return nil, nil, fmt.Errorf("group %q has no backend up", group)
	}
	for _, g := range r.ordered {
		for _, b := range g.backends {
			if group == "" && b.addr == addr && g.login != nil {
				return g, b, nil
			}
		}
	}
	return nil, nil, fmt.Errorf("no group %q or backend %q whose logins the proxy completes", group, addr)
}

// fallBack handles the end of a session's backend bc during a move, or in
// play: it moves the player to the first of its group's fallbacks that
// takes it (session/proxy/kick). It reports false when the session ends.
func (s *session) fallBack(bc *reactor.Conn) bool {
	if s.state == stMoving {
		s.moving().OldClosed(bc)
	} else if kp := kick.Of(s.p.loopOf(bc).inspect.Get(s)); kp == nil || s.client.Closing() || !kp.Ended((*moveHost)(s), s.where(), time.Now()) {
		return false
	}
	s.leaveBackend()
	return true
}

// moveHost is a session as its move sees it.
type moveHost session

// Switched makes the move's backend the session's and relays again.
func (h *moveHost) Switched(m *move.Move, bc *reactor.Conn) {
	s, t := (*session)(h), m.Target()
	s.leaveBackend()
	s.backend.Value = &session{p: s.p} // its last events find a session without a client: ignored
	s.group = s.gen.router.groups[t.Group]
	for _, b := range s.group.backends {
		if b.addr == t.Addr {
			s.target = b
		}
	}
	bc.Value, s.backend, s.onBackend = s, bc, true
	s.p.loopOf(bc).counters.moves[move.Moved].Add(1)
	if s.ticket != nil {
		s.p.cluster.Moved(s.ticket, t.Group)
	}
	s.target.Active.Add(1)
	s.startRelay()
	s.relay(false) // its configuration so far
	s.p.log.Info().Str("user", s.username).Str("group", t.Group).Str("backend", t.Addr).Msg("player moved")
}

// Failed relays the old backend again, or ends the session when it is gone.
func (h *moveHost) Failed(m *move.Move, err error) {
	s := (*session)(h)
	s.p.loopOf(s.client).counters.moves[move.OutcomeOf(err)].Add(1)
	s.p.log.Warn().Str("user", s.username).Str("backend", m.Target().Addr).Err(err).Msg("move failed: the player stays")
	if s.state = stRelay; !s.backend.Opened() || s.backend.Closing() {
		ls := s.p.loopOf(s.client)
		if !kick.Of(ls.inspect.Get(s)).MoveFailed((*moveHost)(s), err) {
			(*moveHost)(s).Kick(move.GoneKick(ls.players.Get(s), err))
		}
		return
	}
	s.startRelay()
}

// Lost ends a session whose move failed past the point of return.
func (h *moveHost) Lost(m *move.Move, r reasons.Reason, err error) {
	s := (*session)(h)
	ls := s.p.loopOf(s.client)
	ls.counters.ended[r].Add(1)
	ls.counters.moves[move.Lost].Add(1)
	s.p.log.Warn().Str("user", s.username).Str("backend", m.Target().Addr).Str("reason", r.String()).Err(err).Msg("move lost: closing the session")
	s.state = stDone
	s.client.Close()
	s.backend.Close()
}

// StartSend starts moving the sessions sel picks (by player name or client
// address, or every one of a group or backend) to the group or backend to,
// at most perLoop at once on each loop, recorded in op; it waits for the
// loops until ctx ends. It may be called from any goroutine.
func (p *Proxy) StartSend(ctx context.Context, sel admin.SendSelector, to admin.SendTarget, perLoop int, op *admin.SendOp) int {
	_, missing := onLoops(ctx, p, func(l *reactor.Loop, _ *loopState) bool {
		q := &move.Queue{Max: perLoop}
		l.EachConn(func(c *reactor.Conn) {
			s, ok := c.Value.(*session)
			if !ok || s.client != c || s.target == nil || s.group == nil || s.state == stDone ||
				!sel.Picks(s.username, s.remoteAddr(), s.group.name, s.target.addr) {
				return
			}
			it := op.Add(s.remoteAddr(), s.username, s.target.addr, to.Group+to.Backend)
			q.Run(func(end func()) {
				it.Moving()
				done := func(err error) { it.End(err); end() }
				if err := s.sendTo(to.Group, to.Backend, nil, done); err != nil {
					done(err)
				}
			})
		})
		return true
	})
	return missing
}

// Send is StartSend with admin.DefaultPerLoop, waiting for the moves until
// ctx ends.
func (p *Proxy) Send(ctx context.Context, sel admin.SendSelector, to admin.SendTarget) admin.SendResponse {
	var op admin.SendOp
	op.Started(p.StartSend(ctx, sel, to, admin.DefaultPerLoop, &op))
	return op.Wait(ctx)
}
