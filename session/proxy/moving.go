package proxy

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/move"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// Moving players between servers (session/proxy/move): the session's hooks.

// keepPlayer keeps what a terminated 1.20.2+ session needs to be moved,
// as it starts to relay.
func (s *session) keepPlayer() {
	if s.pre != nil && s.pre.term != nil {
		if pl, err := move.NewPlayer(s.pre.term, s.pre.handshake, s.protocol, s.ip); err == nil {
			s.p.loopOf(s.client).players.Set(s, pl)
		}
	}
}

// moving returns the session's move in flight (state stMoving).
func (s *session) moving() *move.Move { return s.p.loopOf(s.client).players.Get(s).Move }

// sendTo starts moving the session to group, or to the backend at addr;
// the error says why it cannot be. notice, when set, is shown in the chat
// first; done gets the outcome.
func (s *session) sendTo(group, addr string, notice []byte, done func(error)) error {
	pl := s.p.loopOf(s.client).players.Get(s)
	old := s.backend
	switch {
	case s.raw || s.group == nil || s.group.login == nil:
		return errors.New("its login is relayed untouched (login: transparent): only a login the proxy completes can be moved")
	case !mc.HasConfigurationState(s.protocol):
		return fmt.Errorf("protocol %d: %w", s.protocol, move.ErrTooOld)
	case pl == nil || s.state != stRelay:
		return fmt.Errorf("it is not in play (%s)", s.state)
	case s.clientEOF || s.backendEOF || s.c2s.Broken() || s.s2c.Broken():
		return errors.New("its relay is half-closed or unframed")
	}
	g, b, err := s.moveTarget(group, addr)
	if err != nil {
		return err
	}
	if old != nil && (old.Closing() || !old.Opened()) {
		old = nil
	}
	ls := s.p.loopOf(s.client)
	pair := move.Pair{Client: s.client, Old: old, Ciphers: s.ciphers(), C2S: &s.c2s, S2C: &s.s2c, Compressor: &ls.compressor,
		BytesC2S: &ls.counters.bytesC2S, BytesS2C: &ls.counters.bytesS2C, After: &s.p.backendSide}
	s.state = stMoving
	s.client.Loop().Stop(&s.timer) // the move has its own
	lim := s.gen.cfg.Limits
	move.Start((*moveHost)(s), pair, pl, move.Target{Group: g.name, Addr: b.addr, Settings: g.login, Bungee: g.bungee, Notice: notice, Done: done},
		lim.ConnectTimeout+lim.HandshakeTimeout)
	return nil
}

// moveTarget resolves a move's target: a backend up of group, or the
// configured backend at addr.
func (s *session) moveTarget(group, addr string) (*group, *backend, error) {
	r := s.gen.router
	if group != "" {
		g := r.groups[group]
		if g == nil || g.login == nil {
			return nil, nil, fmt.Errorf("group %q: no such group whose logins the proxy completes", group)
		}
		b, probe := g.pick(&s.p.loopOf(s.client).rnd, s.client.Loop().Index(), r.now(), r.lease)
		if b == nil {
			return nil, nil, fmt.Errorf("group %q has no backend up", group)
		}
		if probe {
			b.DropProbe(r.now()) // a move does not decide a backend's health
		}
		return g, b, nil
	}
	for _, g := range r.ordered {
		for _, b := range g.backends {
			if b.addr == addr && g.login != nil {
				return g, b, nil
			}
		}
	}
	return nil, nil, fmt.Errorf("backend %s: not a backend of a group whose logins the proxy completes", addr)
}

// fallBack moves a terminated session whose backend bc ended to the first
// of its group's fallback groups that takes it, and reports whether one did.
func (s *session) fallBack(bc *reactor.Conn) bool {
	if s.group == nil || s.client.Closing() || s.p.loopOf(bc).players.Get(s) == nil {
		return false
	}
	rest, _ := bc.Peek(-1) // sent on to the client in the clear (OnClose), not yet counted
	s.s2c.Count(rest)
	pk, _ := mc.ConfigPacketsOf(s.protocol)
	for _, f := range s.gen.cfg.Groups[s.group.name].Fallback {
		from := s.group.name
		notice := mc.AppendTextComponent(nil, pk, "The server you were on ("+from+") went away: you are now on "+f, "yellow")
		if err := s.sendTo(f, "", notice, nil); err == nil {
			s.leaveBackend()
			return true
		}
	}
	return false
}

// moveHost is a session as its move sees it.
type moveHost session

// Switched makes the move's backend the session's and relays again.
func (h *moveHost) Switched(m *move.Move, bc *reactor.Conn) {
	s := (*session)(h)
	s.leaveBackend()
	if s.backend != nil {
		s.backend.Value = &session{p: s.p} // its last events find a session without a client: ignored
	}
	t := m.Target()
	s.group = s.gen.router.groups[t.Group]
	for _, b := range s.group.backends {
		if b.addr == t.Addr {
			s.target = b
		}
	}
	bc.Value, s.backend = s, bc
	s.target.Active.Add(1)
	s.onBackend = true
	s.startRelay()
	ls := s.p.loopOf(bc)
	s.relay(bc, s.client, &s.s2c, &ls.counters.bytesS2C, &ls.counters.framesS2C) // its configuration so far
	s.p.log.Info().Str("user", s.username).Str("group", t.Group).Str("backend", t.Addr).Msg("player moved")
}

// Failed puts the session back to relaying its old backend, or ends it
// when that is gone.
func (h *moveHost) Failed(m *move.Move, err error) {
	s := (*session)(h)
	t := m.Target()
	s.p.log.Warn().Str("user", s.username).Str("group", t.Group).Str("backend", t.Addr).Err(err).Msg("move failed: the player stays")
	s.state = stRelay
	if b := s.backend; b == nil || b.Closing() || !b.Opened() {
		pk, _ := mc.ConfigPacketsOf(s.protocol)
		kick := mc.AppendVarInt(nil, pk.PlayDisconnect)
		kick = mc.AppendTextComponent(kick, pk, "The server went away and no other took you in: "+move.Why(err), "")
		frame := s.p.loopOf(s.client).compressor.AppendFrame(nil, kick, s.p.loopOf(s.client).players.Get(s).Threshold)
		s.sendClient(frame)
		s.state = stDone
		s.client.Close()
		return
	}
	s.startRelay()
}

// Lost ends a session whose move failed past the point of return.
func (h *moveHost) Lost(m *move.Move, r reasons.Reason, err error) {
	s := (*session)(h)
	s.p.loopOf(s.client).counters.ended[r].Add(1)
	s.p.log.Warn().Str("user", s.username).Str("backend", m.Target().Addr).Str("reason", r.String()).Err(err).Msg("move lost: closing the session")
	s.state = stDone
	s.client.Close()
	if s.backend != nil {
		s.backend.Close()
	}
}

// Send moves the sessions sel picks to to (the admin API's send), waiting
// for the moves until ctx ends. It may be called from any goroutine.
func (p *Proxy) Send(ctx context.Context, sel admin.SendSelector, to admin.SendTarget) admin.SendResponse {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var out admin.SendResponse
	got, missing := onLoops(ctx, p, func(l *reactor.Loop, ls *loopState) []*admin.SendResult {
		var rs []*admin.SendResult
		l.EachConn(func(c *reactor.Conn) {
			s, ok := c.Value.(*session)
			if !ok || s.client != c || !s.selected(sel) {
				return
			}
			r := &admin.SendResult{Session: s.remoteAddr(), User: s.username, From: s.target.addr, To: to.Group + to.Backend, Result: "in progress"}
			wg.Add(1)
			err := s.sendTo(to.Group, to.Backend, nil, func(err error) {
				mu.Lock()
				defer mu.Unlock()
				r.Result, r.Moved = "moved", err == nil
				if err != nil {
					r.Result = err.Error()
				}
				wg.Done()
			})
			if err != nil {
				r.Result = err.Error()
				wg.Done()
			}
			rs = append(rs, r)
		})
		return rs
	})
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	for _, rs := range got {
		for _, r := range rs {
			out.Results = append(out.Results, *r)
			if r.Moved {
				out.Moved++
			} else {
				out.NotMoved++
			}
		}
	}
	out.LoopsUnanswered = missing
	return out
}

// selected reports whether sel picks the session: by player name or
// client address, or by group or backend.
func (s *session) selected(sel admin.SendSelector) bool {
	switch {
	case s.target == nil || s.state == stDone:
		return false
	case sel.ID != "":
		return sel.ID == s.username || sel.ID == s.remoteAddr()
	case sel.Group != "":
		return s.group != nil && s.group.name == sel.Group
	}
	return s.target.addr == sel.Backend
}
