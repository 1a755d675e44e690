// Package kick moves a player whose backend kicked them (a Disconnect in
// play or, 1.20.2 and later, in configuration) or whose backend went away
// to the first of their group's fallback groups that takes them, instead
// of ending their game.
//
// A Player is a session's inspection User (session/proxy/inspect): it
// claims the backend's Disconnect, which then does not reach the client,
// and keeps it. The session closes that backend and calls Kicked, which
// tries the group's fallbacks in order through the session's Host (a move,
// session/proxy/move, with a chat notice carrying the kick's reason); a
// move that fails tries the next one (MoveFailed). When none takes the
// player the client gets the backend's own Disconnect, whole, then the
// close. A chain of kicks is bounded: a player is not moved to a group
// that kicked them in the chain, and after MaxHops moves in one chain the
// next kick reaches the client.
//
// Everything runs on the session's loop.
package kick

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/inspect"
	"github.com/tidegate/tidegate/session/proxy/move"
)

// Bounds of a chain of kicks: the moves a player is given in one, and how
// long after a kick the next still belongs to the same chain.
const (
	MaxHops     = 3
	ChainWindow = 2 * time.Minute
)

// Outcome is how a kick ended, counted per loop.
type Outcome uint8

// Outcomes, as counted: the player was moved to a fallback; no fallback
// took them (none up, every move failed); the chain had its MaxHops
// moves; and, counted as well as one of those, a reason that did not
// decode.
const (
	Moved Outcome = iota
	NoneTook
	HopLimit
	Unreadable
	Outcomes
)

var outcomeLabels = [Outcomes]string{"moved", "none_took", "hop_limit", "unreadable_reason"}

// String returns the outcome's label.
func (o Outcome) String() string { return outcomeLabels[o] }

// Counts are a loop's kicks by outcome.
type Counts [Outcomes]atomic.Int64

// AddTo adds each outcome's count to m under its label.
func (c *Counts) AddTo(m map[string]int64) {
	for o := range Outcomes {
		m[o.String()] += c[o].Load()
	}
}

// Host is a kicked session's side.
type Host interface {
	// CloseBackend closes the backend that kicked; nothing more of it
	// reaches the client.
	CloseBackend()
	// Moving reports whether a move of the session is in flight (its
	// outcome comes to Landed or MoveFailed).
	Moving() bool
	// SendTo starts moving the player to group, showing notice (a chat
	// component) first; an error says why it cannot start.
	SendTo(group string, notice []byte) error
	// Kick sends the client packet (ID and data, in the client's
	// state) and ends the session.
	Kick(packet []byte)
}

// Where is the group and backend a player is on, and the group's
// fallbacks.
type Where struct {
	Group, Backend string
	Fallback       []string
}

// Player is one session's kicks: the inspection user that claims the
// backend's Disconnect, and the chain of kicks it is in.
type Player struct {
	pl     *move.Player
	ids    inspect.IDs
	counts *Counts
	log    zerolog.Logger
	user   string

	pending *pending
	chain   [MaxHops + 1]string // the groups that kicked, this chain
	hops    int                 // moves in the chain
	last    time.Time           // when the chain's last kick came
}

// pending is a kick whose fallbacks are being tried.
type pending struct {
	packet []byte // the Disconnect (ID and data), as the backend sent it, inflated
	reason string
	state  inspect.State
	gone   bool // no Disconnect: the backend's connection ended
	from   Where
	next   int   // the next of from.Fallback to try
	err    error // why the last one did not take the player
}

// NewPlayer returns the kicks of the movable player pl, counted in
// counts, logged to log.
func NewPlayer(pl *move.Player, user string, counts *Counts, log zerolog.Logger) *Player {
	ids, _ := inspect.IDsOf(pl.Handshake.ProtocolVersion)
	return &Player{pl: pl, ids: ids, user: user, counts: counts, log: log}
}

// Wants claims the Disconnect packets.
func (p *Player) Wants(st inspect.State, id int32) bool {
	return p.pending == nil && id >= 0 && id == p.ids.Disconnect(st)
}

// Claim takes the backend's Disconnect: it does not reach the client,
// and the stream ends.
func (p *Player) Claim(f inspect.Frame) inspect.Verdict {
	reason, err := Reason(f.Packet, f.IDs.ChatNBT)
	if err != nil {
		p.counts[Unreadable].Add(1)
		p.log.Warn().Str("user", p.user).Err(err).Int("bytes", len(f.Packet)).Msg("backend kick: its reason does not read")
		reason = "no reason given"
	}
	p.pending = &pending{packet: bytes.Clone(f.Packet), reason: reason, state: f.State}
	p.pl.Configuring = f.State == inspect.Configuration // a move joins it there (move.Player)
	return inspect.DropRest
}

// Kicked handles the Disconnect Claim took from the backend at w (its
// connection is closed first), at now.
func (p *Player) Kicked(h Host, w Where, now time.Time) {
	h.CloseBackend()
	k := p.pending
	if k == nil {
		return
	}
	k.from = w
	p.log.Info().Str("user", p.user).Str("group", w.Group).Str("backend", w.Backend).Str("state", k.state.String()).
		Str("reason", k.reason).Msg("backend kicked the player: moving them to a fallback")
	p.start(h, now)
}

// Ended handles the end of the backend at w's connection in play (no
// Disconnect): the player is moved as for a kick, told the server went
// away; when none takes them the client reads why. It reports false when
// there is nothing to try (the session then ends as before).
func (p *Player) Ended(h Host, w Where, now time.Time) bool {
	if p.pending != nil {
		return true // a kick's fallback is under way
	}
	if len(w.Fallback) == 0 {
		return false
	}
	p.pending = &pending{gone: true, from: w}
	p.start(h, now)
	return true
}

// start begins a pending kick's chain of fallbacks.
func (p *Player) start(h Host, now time.Time) {
	k := p.pending
	if now.Sub(p.last) > ChainWindow {
		p.hops = 0
	}
	p.last = now
	if p.hops == 0 {
		p.chain = [MaxHops + 1]string{}
	}
	p.chain[p.hops] = k.from.Group
	if p.hops >= MaxHops {
		p.give(h, HopLimit, fmt.Errorf("moved %d times in a row after kicks", p.hops))
		return
	}
	if h.Moving() {
		return // the move in flight decides (Landed, MoveFailed)
	}
	p.next(h)
}

// next tries the pending kick's next fallback; when none is left, the
// client gets the kick.
func (p *Player) next(h Host) {
	k := p.pending
	for k.next < len(k.from.Fallback) {
		g := k.from.Fallback[k.next]
		k.next++
		if p.kickedBy(g) {
			k.err = fmt.Errorf("group %s kicked the player already", g)
			continue
		}
		if err := h.SendTo(g, p.notice(g)); err != nil {
			k.err = err
			continue
		}
		return
	}
	p.give(h, NoneTook, k.err)
}

// kickedBy reports whether group g kicked the player in this chain.
func (p *Player) kickedBy(g string) bool {
	for _, c := range p.chain[:p.hops+1] {
		if c == g {
			return true
		}
	}
	return false
}

// notice is the chat component a player moved to g reads.
func (p *Player) notice(g string) []byte {
	k := p.pending
	if k.gone {
		return move.FallbackNotice(p.pl, k.from.Group, g)
	}
	return mc.AppendTextComponent(nil, p.pl.Packets, "You were kicked from "+k.from.Group+" ("+k.reason+"): you are now on "+g, "yellow")
}

// give ends a pending kick at the client: the backend's own Disconnect, or
// for a backend that went away, why none took the player.
func (p *Player) give(h Host, o Outcome, why error) {
	k := p.pending
	p.pending = nil
	if !k.gone {
		p.counts[o].Add(1)
	}
	p.log.Warn().Str("user", p.user).Str("group", k.from.Group).Str("backend", k.from.Backend).Str("reason", k.reason).
		Bool("gone", k.gone).Str("outcome", o.String()).AnErr("why", why).Msg("no fallback took the player: the client gets the kick")
	if k.gone {
		h.Kick(move.GoneKick(p.pl, why))
		return
	}
	h.Kick(k.packet)
}

// Landed tells the player's kicks that a move took it to group g.
func (p *Player) Landed(g string) {
	if p == nil || p.pending == nil {
		return
	}
	k := p.pending
	p.pending = nil
	p.hops++
	if !k.gone {
		p.counts[Moved].Add(1)
		p.log.Info().Str("user", p.user).Str("group", k.from.Group).Str("backend", k.from.Backend).Str("reason", k.reason).
			Str("fallback", g).Msg("kicked player moved to a fallback")
	}
}

// Of returns the Player among a stream's users, nil without one.
func Of(st *inspect.Stream) *Player {
	if st == nil {
		return nil
	}
	for _, u := range st.Users() {
		if p, ok := u.(*Player); ok {
			return p
		}
	}
	return nil
}

// MoveFailed tells the player's kicks that a move failed with err, the
// player on no backend: the next fallback is tried. It reports false when
// no kick is pending.
func (p *Player) MoveFailed(h Host, err error) bool {
	if p == nil || p.pending == nil {
		return false
	}
	k := p.pending
	k.err = err
	p.next(h)
	return true
}

// Watch inspects session k's backend (its connection) for kicks when the
// movable player pl (nil: not movable) is on a group with a fallback, as
// it relays each of its backends (inspect.Loop.Start); it reports whether
// k is inspected. A kick's
// move that brought the player to w's group is counted here (Landed).
func Watch[K comparable](l *inspect.Loop[K], k K, backend any, pl *move.Player, w Where, user string, counts *Counts, log zerolog.Logger) bool {
	if pl == nil {
		return false
	}
	Of(l.Get(k)).Landed(w.Group)
	if len(w.Fallback) == 0 {
		l.Stop(k)
		return false
	}
	ids, _ := inspect.IDsOf(pl.Handshake.ProtocolVersion)
	_, threshold := pl.Login.Thresholds()
	if p := Of(l.Get(k)); p != nil {
		return l.Ensure(k, backend, ids, threshold, p) // kept, with the stream's other users
	}
	return l.Ensure(k, backend, ids, threshold, NewPlayer(pl, user, counts, log))
}
