package move

import (
	"errors"
	"fmt"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/protocol/mc/play"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// A move before 1.20.2 (the respawn sequence, as Velocity switches servers
// for those versions): there is no configuration state to send the client
// back to, so the new backend's login ends in play and its Join Game is
// the switch. The player plays on the old backend until that Join Game
// has arrived (keep-alives of the new backend before it are answered, any
// other packet is held, bounded). Then, between two of the old backend's
// frames, the client gets the Join Game as the new backend sent it (its
// entity ID untouched: the client takes the new one), a Respawn into
// another dimension and one back into the new world (each change of
// dimension makes the client drop the world it has), a title reset and an
// empty tab-list header and footer, then what was held; from then on
// nothing of the old backend reaches it. The end of the client's frame in
// flight still goes to the old backend, which is then closed, and the
// session relays the client and the new backend again.

// respawnState is what a respawn move keeps between the new backend's
// Join Game and the switch.
type respawnState struct {
	joinFrame []byte    // the Join Game frame, as the new backend framed it
	respawns  [2][]byte // Respawn into another dimension, and back
	held      []byte    // the new backend's frames before its Join Game
	heldCount int
}

// chat is the packet that shows text in the player's chat.
func (p *Player) chat(text, color string) []byte {
	if p.Play != nil {
		return play.AppendChat(nil, *p.Play, play.TextComponent(text, color))
	}
	return mc.AppendSystemChat(nil, p.Packets, mc.AppendTextComponent(nil, p.Packets, text, color))
}

// kick is the play Disconnect packet with reason text.
func (p *Player) kick(text string) []byte {
	if p.Play != nil {
		return play.AppendDisconnect(nil, *p.Play, play.TextComponent(text, ""))
	}
	return mc.AppendTextComponent(mc.AppendVarInt(nil, p.Packets.PlayDisconnect), p.Packets, text, "")
}

// supportedPlay reports whether protocol v is moved with the respawn
// sequence.
func supportedPlay(v int32) bool {
	_, ok := play.PacketsOf(v)
	return ok
}

// awaitJoin: the new backend logged the player in, straight into play;
// its Join Game is read next.
func (m *Move) awaitJoin(bc *reactor.Conn) {
	m.phase = phJoinWait
	m.readJoin(bc)
}

// readJoin reads the new backend's play frames up to its Join Game.
func (m *Move) readJoin(bc *reactor.Conn) {
	pk, th, k := m.player.Play, m.player.Threshold, m.pair.Compressor
	buf, _ := bc.Peek(-1)
	off := 0
	for m.phase == phJoinWait {
		n, hl, err := mc.SplitFrame(buf[off:], mc.MaxFrameLength)
		if err == nil && n == 0 {
			break
		}
		var frame, packet, data []byte
		var id int32
		if err == nil {
			frame = buf[off : off+n]
			if packet = frame[hl:]; th >= 0 {
				packet, err = k.Inflate(packet, th, mc.MaxFrameLength)
			}
		}
		if err == nil {
			id, data, err = play.PacketID(packet)
		}
		if err != nil {
			bc.Discard(-1)
			m.fail(fmt.Errorf("backend %s: a play frame before its Join Game: %w", m.target.Addr, err))
			return
		}
		off += n
		switch {
		case id == pk.JoinGame:
			j, err := play.ParseJoinGame(*pk, data)
			if err != nil {
				bc.Discard(-1)
				m.fail(fmt.Errorf("backend %s: %w", m.target.Addr, err))
				return
			}
			r := &m.resp
			r.joinFrame = append(r.joinFrame[:0], frame...)
			r.respawns[0] = play.AppendRespawn(r.respawns[0][:0], *pk, j, true)
			r.respawns[1] = play.AppendRespawn(r.respawns[1][:0], *pk, j, false)
			bc.Discard(off)
			bc.PauseRead() // the rest is relayed after the switch
			m.atBoundary(m.respawnSwitch)
			return
		case id == pk.KeepAliveCB:
			_ = bc.Write(k.AppendFrame(nil, append(mc.AppendVarInt(nil, pk.KeepAliveSB), data...), th))
		default:
			if m.resp.heldCount++; m.resp.heldCount > MaxQueuedFrames || len(m.resp.held)+n > MaxQueuedBytes {
				bc.Discard(-1)
				m.fail(fmt.Errorf("backend %s sent over %d frames or %d bytes before its Join Game", m.target.Addr, MaxQueuedFrames, MaxQueuedBytes))
				return
			}
			m.resp.held = append(m.resp.held, frame...)
		}
	}
	bc.Discard(off)
}

// respawnSwitch sends the client the new backend's Join Game and the
// Respawns (after the fallback's notice if there is one); nothing of the
// old backend reaches it after.
func (m *Move) respawnSwitch() {
	pk, r := m.player.Play, &m.resp
	out := m.scratch[:0]
	if n := m.target.Notice; n != nil {
		out = m.appendFrame(out, play.AppendChat(nil, *pk, n)) // a JSON string before 1.20.3
	}
	out = append(out, r.joinFrame...)
	out = m.appendFrame(out, r.respawns[0])
	out = m.appendFrame(out, r.respawns[1])
	if t, ok := play.AppendTitleReset(nil, *pk); ok {
		out = m.appendFrame(out, t)
	}
	if hf, ok := play.AppendHeaderFooterReset(nil, *pk); ok {
		out = m.appendFrame(out, hf)
	}
	out = append(out, r.held...)
	m.pair.BytesS2C.Add(int64(len(r.joinFrame) + len(r.held)))
	m.sendClient(out)
	m.scratch = out
	m.resp = respawnState{}
	if o := m.pair.Old; o != nil {
		o.PauseRead()
	}
	m.phase = phTail
	m.readTail()
}

// readTail sends the end of the client's frame in flight to the old
// backend, then switches the client over to the new one.
func (m *Move) readTail() {
	c := m.pair.Client
	buf, _ := c.Peek(-1)
	m.pair.Ciphers.Inbound(buf, true)
	k, done := toBoundary(m.pair.C2S, buf)
	m.toOld(buf[:k])
	if !done {
		c.Discard(-1)
		if m.pair.C2S.Broken() {
			m.lose(reasons.MoveLost, errors.New("the client's stream to the old backend lost its frames"))
		}
		return
	}
	m.in = append(m.in[:0], buf[k:]...)
	c.Discard(-1)
	m.switchOver(m.in)
}
