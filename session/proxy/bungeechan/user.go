package bungeechan

import (
	"slices"
	"time"

	"github.com/tidegate/tidegate/protocol/bungeemsg"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor/looptimer"
	"github.com/tidegate/tidegate/session/proxy/move"
)

// Loop is a session's event loop as a User uses it (reactor.Loop is one).
type Loop interface {
	Execute(f func()) error
	Schedule(t *looptimer.Timer, d time.Duration)
	Stop(t *looptimer.Timer)
}

// Session is a player's session as the channel acts on it. Loop may be
// called from any goroutine; the other methods run on that loop.
type Session interface {
	// Relaying reports whether the session relays: it is not being
	// moved, half-closed, or ended.
	Relaying() bool
	// WriteClient writes a whole frame, in the client's framing, sealed
	// when the client is encrypted; WriteBackend one in the backend's.
	WriteClient(frame []byte)
	WriteBackend(frame []byte)
	// SendTo starts moving the player to group (notice: none here).
	SendTo(group string, notice []byte) error
	// Kick sends the client packet (a play Disconnect), in its framing,
	// and ends the session.
	Kick(packet []byte)
}

// Between reports whether a relay's frame counter stands between frames.
func Between(fc *mc.FrameCounter) bool {
	p := fc.Position()
	return !p.Broken && p.Shift == 0 && p.Remaining == 0
}

// Bounds of the frames a User holds until their stream stands between
// frames, and how long it waits for that before it drops them.
const (
	MaxHeldBytes = 64 << 10
	retryEvery   = 10 * time.Millisecond
	maxRetries   = 100
)

// User is one session's end of the channel: it claims the backend's
// plugin messages on the BungeeCord channel (Claim), answers them through
// its session, and is how other sessions' messages reach its player. It
// runs on the session's loop.
type User struct {
	Member
	d       *Directory
	pk      Packets
	held    []heldFrame
	heldLen int
	tries   int
	timer   looptimer.Timer
	// waiting are the messages that wait for the network's players
	// (network.go), in order, with every later message behind them;
	// asking says a read is asked for; left that the session ended.
	waiting    []waitingMsg
	waitingLen int
	asking     bool
	left       bool
}

// waitingMsg is a message held until the network's players are read.
type waitingMsg struct {
	channel string
	payload []byte // a copy
}

type heldFrame struct {
	toClient bool
	frame    []byte // a kick's is the packet, which Session.Kick frames
	what     string // for the log when it is dropped
}

// Member is a session as it joins the directory.
type Member struct {
	Session Session
	Loop    Loop         // the session's
	Player  *move.Player // the movable player of its terminated login
	// ToClient and ToBackend count the frames the relay wrote each way.
	ToClient, ToBackend *mc.FrameCounter
	On                  bool // the channel is on for the player's group
	// ClientThreshold and BackendThreshold are the compression thresholds
	// of the two sides (-1: off); a move keeps them.
	ClientThreshold, BackendThreshold int
	Counts                            *Counts        // its loop's
	Scratch                           *mc.Compressor // its loop's
}

// Join returns the User of m, known as p, in the directory.
func (d *Directory) Join(m Member, p Player) *User {
	u := &User{Member: m, d: d, pk: PacketsOf(m.Player)}
	u.timer.F = u.flush
	d.join(u, p)
	return u
}

// Moved records that the player is on server now, whose group has the
// channel on or not.
func (u *User) Moved(server string, on bool) {
	u.On = on
	u.d.moved(u, server)
	u.dropWaiting("the player moved to another server before the answer")
}

// Leave takes the user out of the directory as its session ends.
func (u *User) Leave() {
	u.left = true
	u.waiting, u.waitingLen = nil, 0
	u.d.leave(u)
	u.Loop.Stop(&u.timer)
	u.held, u.heldLen = nil, 0
}

// Wants reports whether a clientbound packet of id, in play, may be a
// message of the channel.
func (u *User) Wants(play bool, id int32) bool { return u.On && play && id == u.pk.CB }

// Claim handles a whole clientbound packet (ID and data) and reports
// whether it was the channel's, which then does not reach the client.
func (u *User) Claim(packet []byte) bool {
	if !u.On {
		return false
	}
	channel, payload, ok := Claim(packet, u.pk)
	if !ok {
		return false
	}
	m, err := bungeemsg.ParseRequest(payload)
	if u.d.roster != nil && (len(u.waiting) > 0 || err == nil && u.d.needsNetwork(m)) {
		u.wait(channel, payload)
		return true
	}
	u.handle(channel, len(payload), handleRequest(&host{d: u.d, self: u}, m, err, nil))
	return true
}

// needsNetwork reports whether the answer to m depends on the players of
// the other proxies: PlayerList, PlayerCount of a server (ALL is the
// heartbeat's count), and GetPlayerServer and UUIDOther about a player who
// is not on this proxy.
func (d *Directory) needsNetwork(m bungeemsg.Msg) bool {
	switch m.Sub {
	case bungeemsg.PlayerList:
		return true
	case bungeemsg.PlayerCount:
		return m.Server != bungeemsg.All
	case bungeemsg.GetPlayerServer, bungeemsg.UUIDOther:
		return d.find(m.Player) == nil
	}
	return false
}

// wait holds a message until the network's players are read, and asks
// for them: the answer is made on the loop, in the messages' order.
func (u *User) wait(channel string, payload []byte) {
	if u.waitingLen+len(payload) > MaxHeldBytes {
		u.Counts[Failed].Add(1)
		u.d.log.Warn().Str("user", u.name()).Str("channel", channel).Int("held_bytes", u.waitingLen).
			Msg("BungeeCord channel: too many messages wait for the network's players: dropped")
		return
	}
	u.waiting = append(u.waiting, waitingMsg{channel: channel, payload: slices.Clone(payload)})
	u.waitingLen += len(payload)
	if u.asking {
		return
	}
	u.asking = true
	if v := u.d.roster.get(func(v *networkView, err error) {
		if e := u.Loop.Execute(func() { u.answerWaiting(v, err) }); e != nil {
			u.d.log.Debug().Err(e).Msg("BungeeCord channel: the network's players came after the loop stopped")
		}
	}); v != nil {
		u.answerWaiting(v, nil)
	}
}

// answerWaiting answers the waiting messages with the other proxies'
// players of v, or, when their read failed (err), with this proxy's.
func (u *User) answerWaiting(v *networkView, err error) {
	u.asking = false
	if u.left || len(u.waiting) == 0 {
		return
	}
	if err != nil {
		u.d.log.Warn().Str("user", u.name()).Int("messages", len(u.waiting)).Err(err).
			Msg("BungeeCord channel: the network's players could not be read: answered with this proxy's")
	}
	waiting := u.waiting
	u.waiting, u.waitingLen = nil, 0
	h := &host{d: u.d, self: u, net: v}
	for _, m := range waiting {
		u.handle(m.channel, len(m.payload), Handle(h, m.payload, nil))
	}
}

// dropWaiting drops the waiting messages: their backend is gone.
func (u *User) dropWaiting(why string) {
	if len(u.waiting) == 0 {
		return
	}
	u.Counts[Failed].Add(int64(len(u.waiting)))
	u.d.log.Info().Str("user", u.name()).Int("messages", len(u.waiting)).Str("why", why).Msg("BungeeCord channel: messages not answered")
	u.waiting, u.waitingLen = nil, 0
}

// handle counts, answers and logs r, what Handle made of one message of
// size bytes on channel.
func (u *User) handle(channel string, size int, r Result) {
	u.Counts[r.Outcome].Add(1)
	if r.Answer != nil {
		u.hold(false, AppendAnswer(nil, u.pk, channel, r.Answer, u.BackendThreshold, u.Scratch), r.Msg.Sub.String())
	}
	if r.Err != nil {
		ev := u.d.log.Warn()
		if r.Outcome == Failed {
			ev = u.d.log.Info()
		}
		ev.Str("user", u.name()).Str("channel", channel).Str("subchannel", r.Msg.Sub.String()).Str("outcome", r.Outcome.String()).
			Int("bytes", size).Err(r.Err).Msg("BungeeCord channel: message not done")
	}
}

func (u *User) name() string {
	u.d.mu.RLock()
	defer u.d.mu.RUnlock()
	if e := u.d.bySess[u]; e != nil {
		return e.p.Name
	}
	return ""
}

// showChat shows text in the player's chat.
func (u *User) showChat(text string) {
	u.hold(true, u.Scratch.AppendFrame(nil, u.Player.ChatPacket(text), u.ClientThreshold), "chat")
}

// kick disconnects the player with reason.
func (u *User) kick(reason string) { u.hold(true, u.Player.KickPacket(reason), "kick") }

// hold queues frame for the client (toClient) or the backend and writes
// what it can: a frame for the backend goes now when the backend's stream
// stands between frames; one for the client after the relay's callback
// (Claim runs inside the relay of the client's stream).
func (u *User) hold(toClient bool, frame []byte, what string) {
	if u.heldLen+len(frame) > MaxHeldBytes {
		u.Counts[Failed].Add(1)
		u.d.log.Warn().Str("user", u.name()).Str("what", what).Int("held_bytes", u.heldLen).Msg("BungeeCord channel: too much held for a session: dropped")
		return
	}
	u.held = append(u.held, heldFrame{toClient: toClient, frame: frame, what: what})
	u.heldLen += len(frame)
	if toClient || len(u.held) > 1 {
		if !u.timer.Armed() {
			u.Loop.Schedule(&u.timer, 0)
		}
		return
	}
	u.flush()
}

// flush writes the held frames, in order, while their streams stand
// between frames; it tries again later, and at last drops them.
func (u *User) flush() {
	for len(u.held) > 0 {
		h := u.held[0]
		fc := u.ToBackend
		if h.toClient {
			fc = u.ToClient
		}
		if !u.Session.Relaying() || !Between(fc) {
			break
		}
		u.held, u.heldLen = u.held[1:], u.heldLen-len(h.frame)
		switch {
		case h.what == "kick":
			u.Session.Kick(h.frame)
		case h.toClient:
			u.Session.WriteClient(h.frame)
		default:
			u.Session.WriteBackend(h.frame)
		}
	}
	if len(u.held) == 0 {
		u.held, u.tries = nil, 0
		return
	}
	if u.tries++; u.tries > maxRetries {
		held := u.held
		u.held, u.heldLen, u.tries = nil, 0, 0
		for _, h := range held {
			u.Counts[Failed].Add(1)
			u.d.log.Warn().Str("user", u.name()).Str("what", h.what).Msg("BungeeCord channel: the stream never stood between frames: dropped")
			if h.what == "kick" {
				u.Session.Kick(h.frame) // ends the session all the same; its client may not read the reason
				return
			}
		}
		return
	}
	u.Loop.Schedule(&u.timer, retryEvery)
}
