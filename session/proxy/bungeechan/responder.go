// Package bungeechan answers the BungeeCord plugin channel ("BungeeCord"
// before 1.13, "bungeecord:main" from 1.13) for the proxy: the backend of
// a terminated session sends a plugin message on it to its client, the
// proxy claims it (the client never sees it) and Handle turns it into an
// answer, a serverbound plugin message back to the same backend, and
// actions (a move, a chat message, a kick), so that server plugins written
// for BungeeCord or Velocity (lobby selectors, player counters) work
// unchanged.
//
// Handle is pure: everything it knows and does goes through a Host, and it
// runs on the session's loop. Directory (directory.go) is the Host the
// proxy uses: the players of this proxy, by name and by server, shared by
// the loops, and the network's count from the cluster when there is one.
// frames.go reads the clientbound plugin message and writes the
// serverbound answer in the backend's framing.
//
// Forward and ForwardToPlayer are refused (counted as refused, logged):
// they would need a message routed to a backend through another session,
// possibly on another loop or proxy, and BungeeCord's queueing for a
// server with no player on it; the proxy does not fake them.
package bungeechan

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/tidegate/tidegate/protocol/bungeemsg"
	"github.com/tidegate/tidegate/protocol/mc"
)

// Player is one player as the channel tells of them.
type Player struct {
	Name   string
	UUID   [16]byte
	IP     string // the client's address
	Port   int
	Server string // the group the player is on
}

// Host is the proxy as Handle sees it, for the session whose backend sent
// the message. Its methods run on that session's loop and do not block.
type Host interface {
	// Self is the player whose backend sent the message.
	Self() Player
	// Servers returns the servers' (groups') names, in the
	// configuration's order.
	Servers() []string
	// ServerAddr returns the address of server's first backend; ok is
	// false when there is no such server.
	ServerAddr(server string) (host string, port int, ok bool)
	// Count returns how many players are on server, every one for
	// bungeemsg.All; ok is false when there is no such server.
	Count(server string) (n int, ok bool)
	// Names returns the names of the players on server, every one for
	// bungeemsg.All; ok is false when there is no such server.
	Names(server string) (names []string, ok bool)
	// Find returns the player named name (any case).
	Find(name string) (Player, bool)
	// Send asks that the player named player (Self's name: this one) be
	// moved to server.
	Send(player, server string) error
	// Chat shows text, with legacy § formatting, in the chat of the
	// player named player, or of every player for bungeemsg.All.
	Chat(player, text string) error
	// Kick disconnects the player named player with reason (legacy §
	// formatting).
	Kick(player, reason string) error
}

// Outcome is what became of one message, counted per loop.
type Outcome uint8

// Outcomes, as counted.
const (
	Answered   Outcome = iota // an answer went back
	Acted                     // an action was asked (Connect, Message, KickPlayer, ...): nothing to answer
	Unanswered                // about no such server or player: nothing is answered, as BungeeCord does
	Failed                    // the action or the answer could not be done (Err says why)
	Refused                   // Forward and ForwardToPlayer: not routed (see the package's doc)
	Malformed                 // the payload is not a message of its subchannel
	UnknownSub                // a subchannel the proxy does not know
	Outcomes
)

var outcomeLabels = [Outcomes]string{"answered", "acted", "unanswered", "failed", "refused", "malformed", "unknown_subchannel"}

// String returns the outcome's label.
func (o Outcome) String() string { return outcomeLabels[o] }

// Counts are a loop's messages by outcome.
type Counts [Outcomes]atomic.Int64

// AddTo adds each outcome's count to m under its label.
func (c *Counts) AddTo(m map[string]int64) {
	for o := range Outcomes {
		m[o.String()] += c[o].Load()
	}
}

// Result is what Handle made of one message.
type Result struct {
	Outcome Outcome
	Msg     bungeemsg.Msg // the request, as far as it was read
	// Answer is the answer's payload, appended to Handle's dst; nil
	// when there is none.
	Answer []byte
	Err    error // why, for Failed, Refused, Malformed and UnknownSub
}

// ErrForwardRefused is why Forward and ForwardToPlayer are refused.
var ErrForwardRefused = errors.New("the subchannels Forward and ForwardToPlayer are not supported: the proxy does not route plugin messages to other backends")

// Handle reads one payload a backend sent on the BungeeCord channel, acts
// on it through h and appends its answer, if any, to dst.
func Handle(h Host, payload, dst []byte) Result {
	m, err := bungeemsg.ParseRequest(payload)
	return handleRequest(h, m, err, dst)
}

// handleRequest is Handle of a payload already parsed (as m, with err).
func handleRequest(h Host, m bungeemsg.Msg, err error, dst []byte) Result {
	r := Result{Msg: m}
	switch {
	case errors.Is(err, bungeemsg.ErrUnknownSub):
		r.Outcome, r.Err = UnknownSub, err
		return r
	case err != nil:
		r.Outcome, r.Err = Malformed, err
		return r
	}
	ans, act, ok := answer(h, m)
	switch {
	case act != nil:
		r.Outcome, r.Err = Acted, act()
		if r.Err != nil {
			r.Outcome = Failed
		}
		return r
	case m.Sub == bungeemsg.Forward || m.Sub == bungeemsg.ForwardToPlayer:
		r.Outcome, r.Err = Refused, ErrForwardRefused
		return r
	case !ok:
		r.Outcome = Unanswered
		return r
	}
	ans.Sub = m.Sub
	if r.Answer, err = bungeemsg.AppendResponse(dst, ans); err != nil {
		r.Outcome, r.Err, r.Answer = Failed, fmt.Errorf("answering %s: %w", m.Sub, err), nil
		return r
	}
	r.Answer = r.Answer[len(dst):len(r.Answer):len(r.Answer)]
	r.Outcome = Answered
	return r
}

// answer returns the answer to m, or the action it asks; ok is false when
// there is no answer (no such server or player).
func answer(h Host, m bungeemsg.Msg) (ans bungeemsg.Msg, act func() error, ok bool) {
	switch m.Sub {
	case bungeemsg.Connect:
		return ans, func() error { return h.Send(h.Self().Name, m.Server) }, false
	case bungeemsg.ConnectOther:
		return ans, func() error { return h.Send(m.Player, m.Server) }, false
	case bungeemsg.Message, bungeemsg.MessageRaw:
		return ans, func() error { return chat(h, m) }, false
	case bungeemsg.KickPlayer, bungeemsg.KickPlayerRaw:
		return ans, func() error { return kick(h, m) }, false
	case bungeemsg.IP:
		p := h.Self()
		return bungeemsg.Msg{Host: p.IP, Port: int32(p.Port)}, nil, true
	case bungeemsg.UUID:
		p := h.Self()
		return bungeemsg.Msg{UUID: undashed(p.UUID)}, nil, true
	case bungeemsg.GetServer:
		return bungeemsg.Msg{Server: h.Self().Server}, nil, true
	case bungeemsg.GetServers:
		return bungeemsg.Msg{Text: bungeemsg.JoinNames(h.Servers())}, nil, true
	case bungeemsg.PlayerCount:
		n, ok := h.Count(m.Server)
		return bungeemsg.Msg{Server: m.Server, Count: int32(min(n, 1<<31-1))}, nil, ok
	case bungeemsg.PlayerList:
		names, ok := h.Names(m.Server)
		return bungeemsg.Msg{Server: m.Server, Text: bungeemsg.JoinNames(names)}, nil, ok
	case bungeemsg.ServerIP:
		host, port, ok := h.ServerAddr(m.Server)
		return bungeemsg.Msg{Server: m.Server, Host: host, Port: int32(port)}, nil, ok
	}
	p, found := h.Find(m.Player) // the subchannels about another player
	switch m.Sub {
	case bungeemsg.IPOther:
		// The other proxies' records have no address: only a player with
		// one is answered.
		return bungeemsg.Msg{Player: p.Name, Host: p.IP, Port: int32(p.Port)}, nil, found && p.IP != ""
	case bungeemsg.UUIDOther:
		return bungeemsg.Msg{Player: p.Name, UUID: undashed(p.UUID)}, nil, found
	case bungeemsg.GetPlayerServer:
		return bungeemsg.Msg{Player: p.Name, Server: p.Server}, nil, found
	}
	return ans, nil, false // Forward, ForwardToPlayer
}

// chat shows a Message (legacy text) or MessageRaw (a JSON component).
func chat(h Host, m bungeemsg.Msg) error {
	text, err := plain(m)
	if err != nil {
		return err
	}
	return h.Chat(m.Player, text)
}

// kick disconnects for KickPlayer (legacy text) or KickPlayerRaw (JSON).
func kick(h Host, m bungeemsg.Msg) error {
	text, err := plain(m)
	if err != nil {
		return err
	}
	return h.Kick(m.Player, text)
}

// plain returns a message's text as legacy § text: MessageRaw's and
// KickPlayerRaw's JSON components are rendered to it (their click and
// hover events are lost).
func plain(m bungeemsg.Msg) (string, error) {
	if m.Sub != bungeemsg.MessageRaw && m.Sub != bungeemsg.KickPlayerRaw {
		return m.Text, nil
	}
	text, err := mc.LegacyText([]byte(m.Text))
	if err != nil {
		return "", fmt.Errorf("%s of %.64q: %w", m.Sub, m.Text, err)
	}
	return text, nil
}

// undashed writes a UUID as 32 lower-case hex digits, as BungeeCord does.
func undashed(u [16]byte) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 32)
	for i, c := range u {
		b[2*i], b[2*i+1] = hex[c>>4], hex[c&15]
	}
	return string(b)
}

// splitPort splits "host:port" the way ServerIP answers it: a bad port is 0.
func splitPort(hostport string) (string, int) {
	for i := len(hostport) - 1; i >= 0; i-- {
		if hostport[i] == ':' {
			p, err := strconv.Atoi(hostport[i+1:])
			if err != nil || p < 0 || p > 65535 {
				p = 0
			}
			h := hostport[:i]
			if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
				h = h[1 : len(h)-1]
			}
			return h, p
		}
	}
	return hostport, 0
}
