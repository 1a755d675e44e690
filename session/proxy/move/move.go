// Package move moves a terminated 1.20.2+ session (login: offline or
// online) to another backend while its client stays connected, through the
// configuration state.
//
// A Move logs in to the new backend first (offline, with the target
// group's forwarding, as session/proxy/login does for the first backend)
// while the player goes on playing on the old one. Only when the new
// backend has sent Login Success does the switch start: at the end of the
// frame the old backend is in the middle of, the client gets Start
// Configuration, and from then on nothing of the old backend reaches it.
// The client's frames up to its Acknowledge Configuration still go to the
// old backend (they are play packets); the acknowledgement becomes the
// new backend's Login Acknowledged, the old backend is closed, and the
// session relays the client and the new backend byte for byte again: both
// are in configuration, and the new backend's configuration and play
// follow unchanged. A move that fails before the switch (the backend is
// down, refuses the login, compresses differently, times out) leaves the
// player where it was, told why in the chat; one that fails after it
// closes the pair with a counted reason.
//
// Everything runs on the session's loop: no goroutine, no lock.
package move

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/protocol/mc/play"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/looptimer"
	"github.com/tidegate/tidegate/session/proxy/login"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// Bounds of what a move holds of the client's input between Start
// Configuration and its acknowledgement: frames received, and the bytes of
// a frame not yet whole.
const (
	MaxQueuedFrames = 1024
	MaxQueuedBytes  = 1 << 20
)

// Player is what a terminated session keeps to be moved: the identity to
// log in again with, the client's handshake and compression, and its
// version's packet IDs.
type Player struct {
	Login     *login.Backend
	Handshake mc.Handshake // the client's (its Address is the session's own copy)
	ClientIP  string
	Threshold int // the client's compression threshold, -1 when off
	Packets   mc.ConfigPackets
	// Play is set for a version before 1.20.2, moved with the respawn
	// sequence (respawn.go); Packets is then empty.
	Play *play.Packets
	Move *Move // the move in flight, nil otherwise
	// Configuring: the client is in the configuration state, not play
	// (1.20.2+: its backend kicked it there): a move joins it to the new
	// backend as it is, without Start Configuration or a chat notice.
	Configuring bool
}

// ErrTooOld is why a session older than 1.20.2 is not moved.
var ErrTooOld = errors.New("moves need 1.20.2 or later, or one of " + play.Supported())

// NewPlayer returns what a terminated session of protocol v, whose
// backend login b completed, keeps to be moved.
func NewPlayer(b *login.Backend, hs mc.Handshake, v int32, clientIP string) (*Player, error) {
	pl := &Player{Login: b, Handshake: hs, ClientIP: clientIP, Threshold: b.Threshold()}
	var ok bool
	if pl.Packets, ok = mc.ConfigPacketsOf(v); !ok {
		pk, ok := play.PacketsOf(v)
		if !ok {
			return nil, fmt.Errorf("protocol %d: %w", v, ErrTooOld)
		}
		pl.Play = &pk
	}
	return pl, nil
}

// Target is where a move goes.
type Target struct {
	Group    string
	Addr     string
	Settings *login.Settings // the target group's login (its forwarding)
	Bungee   bool            // the target group forwards the BungeeCord way
	// Notice, when set, is a chat component the client reads just before
	// the switch (why a fallback moved it).
	Notice []byte
	// Done, when set, gets the move's outcome on the loop: nil once the
	// client and the new backend are joined.
	Done func(error)
}

// Pair is the session a move works on: its connections, the client's
// ciphers (nil when not encrypted), the frame counters of its relay and
// the loop's counters it adds to.
type Pair struct {
	Client, Old        *reactor.Conn // Old is nil when the old backend is gone (a fallback)
	Ciphers            *login.Ciphers
	C2S, S2C           *mc.FrameCounter
	Compressor         *mc.Compressor // the loop's scratch
	BytesC2S, BytesS2C *atomic.Int64
	// After handles the new backend's events once the session relays it.
	After reactor.HalfCloseHandler
}

// Host is the session's side of a move.
type Host interface {
	// Switched: the client and the new backend bc are both in
	// configuration; the session relays them from now on, with bc's Value
	// its own. The old backend is closed.
	Switched(m *Move, bc *reactor.Conn)
	// Failed: the move ended before the switch; the player is where it was
	// (told why), or on no backend at all when the old one is gone.
	Failed(m *Move, err error)
	// Lost: the move failed after the switch; the session must end, r
	// counted.
	Lost(m *Move, r reasons.Reason, err error)
}

// phase is where a move is.
type phase uint8

const (
	phDial     phase = iota // the new backend is being dialed
	phLogin                 // logging in to it
	phJoinWait              // before 1.20.2: logged in, waiting for its Join Game (respawn.go)
	phBoundary              // the old backend's frame in flight ends, then next runs
	phAwaitAck              // Start Configuration sent: waiting for the client's acknowledgement
	phTail                  // before 1.20.2: Join Game and Respawns sent; the client's frame in flight goes to the old backend
	phSwitched              // relayed by the session
	phOver                  // failed or abandoned
)

// Move is one move in flight.
type Move struct {
	host    Host
	pair    Pair
	player  *Player
	target  Target
	login   *login.Backend
	bc      *reactor.Conn
	phase   phase
	next    func() // phBoundary: what waits for the old backend's frame to end
	timer   looptimer.Timer
	in      []byte // the client's input past the frame in flight, decrypted, not yet whole frames
	frames  int    // the client's frames since Start Configuration
	scratch []byte
	resp    respawnState // before 1.20.2 (respawn.go)
}

// Start starts moving the session pr of player p to t; the move gives up
// after timeout. The session must not relay the old backend to the client
// without asking the move (OldTraffic), nor the client (ClientTraffic).
func Start(h Host, pr Pair, p *Player, t Target, timeout time.Duration) *Move {
	m := &Move{host: h, pair: pr, player: p, target: t, login: p.Login.Again(t.Settings)}
	p.Move = m
	l := pr.Client.Loop()
	m.timer.F = m.timedOut
	l.Schedule(&m.timer, timeout)
	m.bc = l.Dial(t.Addr, timeout, m, m)
	return m
}

// Target returns where the move goes.
func (m *Move) Target() Target { return m.target }

// OnOpen sends the new backend the handshake and Login Start.
func (m *Move) OnOpen(bc *reactor.Conn) {
	if m.phase != phDial {
		return
	}
	m.phase = phLogin
	rw := login.Rewrite{Bungee: m.target.Bungee}
	if rw.Bungee {
		u, props := m.login.Identity()
		rw.UUID, rw.Properties = &u, props
	}
	frame, _ := login.AppendHandshake(m.scratch[:0], nil, m.player.Handshake, rw, m.player.ClientIP, m.login.Name())
	m.scratch = m.login.AppendOwnLoginStart(frame)
	_ = bc.Write(m.scratch)
}

// OnTraffic reads the new backend's login, then hands it on.
func (m *Move) OnTraffic(bc *reactor.Conn) {
	switch m.phase {
	case phSwitched:
		m.pair.After.OnTraffic(bc)
	case phLogin:
		m.readLogin(bc)
	case phJoinWait:
		m.readJoin(bc)
	default:
		bc.PauseRead() // read once the client is in configuration
	}
}

// OnReadEOF treats a new backend's half-close before the switch as its end.
func (m *Move) OnReadEOF(bc *reactor.Conn) {
	if m.phase == phSwitched {
		m.pair.After.OnReadEOF(bc)
		return
	}
	bc.Close()
}

// OnClose ends the move when the new backend goes before the switch.
func (m *Move) OnClose(bc *reactor.Conn, err error) {
	switch m.phase {
	case phSwitched:
		m.pair.After.OnClose(bc, err)
	case phOver:
	case phAwaitAck, phTail:
		m.lose(reasons.MoveLost, fmt.Errorf("backend %s closed while the client reconfigured: %w", m.target.Addr, closeCause(err)))
	default:
		m.fail(fmt.Errorf("backend %s: %w", m.target.Addr, closeCause(err)))
	}
}

// closeCause names why a backend connection ended.
func closeCause(err error) error {
	if err == nil {
		return errors.New("it closed the connection")
	}
	return err
}

// readLogin feeds the new backend's login frames to the login.
func (m *Move) readLogin(bc *reactor.Conn) {
	buf, _ := bc.Peek(-1)
	n, toBackend, _, err := m.login.Feed(buf, m.pair.Compressor)
	if len(toBackend) > 0 {
		_ = bc.Write(toBackend)
	}
	if err != nil {
		bc.Discard(-1)
		m.fail(fmt.Errorf("backend %s: %w", m.target.Addr, err))
		return
	}
	bc.Discard(n)
	if !m.login.LoggedIn() {
		return // a move's login answers every plugin request itself: nothing else goes to the client
	}
	if th := m.login.Threshold(); th != m.player.Threshold {
		m.fail(fmt.Errorf("backend %s compresses at threshold %d, the client at %d: a move needs the same", m.target.Addr, th, m.player.Threshold))
		return
	}
	if m.player.Play != nil {
		m.awaitJoin(bc) // respawn.go
		return
	}
	bc.PauseRead() // its configuration waits for the client
	m.atBoundary(m.startConfiguration)
}

// atBoundary runs f between two of the old backend's frames toward the
// client: now, or once the frame in flight has been relayed (OldTraffic).
func (m *Move) atBoundary(f func()) {
	if p := m.pair.S2C.Position(); p.Shift == 0 && p.Remaining == 0 && !p.Broken {
		f()
		return
	}
	if m.pair.Old == nil || m.pair.S2C.Broken() {
		m.lose(reasons.MoveLost, errors.New("the old backend's stream to the client ended inside a frame"))
		return
	}
	m.phase, m.next = phBoundary, f
}

// startConfiguration tells the client to reconfigure, after the fallback's
// notice if there is one; nothing of the old backend reaches it after.
func (m *Move) startConfiguration() {
	pk := &m.player.Packets
	if m.player.Configuring {
		m.phase = phAwaitAck
		if p := m.pair.C2S.Position(); p.Shift == 0 && p.Remaining == 0 && !p.Broken {
			m.switchOver(nil) // between two of the client's frames: now
		}
		return // at the end of the client's frame in flight (readClient)
	}
	m.scratch = m.scratch[:0]
	if n := m.target.Notice; n != nil {
		m.scratch = m.appendFrame(m.scratch, mc.AppendSystemChat(nil, *pk, n))
	}
	m.scratch = m.appendFrame(m.scratch, mc.AppendVarInt(nil, pk.StartConfiguration))
	m.sendClient(m.scratch)
	if o := m.pair.Old; o != nil {
		o.PauseRead()
	}
	m.phase = phAwaitAck
	m.readClient()
}

// appendFrame appends packet in the client's framing.
func (m *Move) appendFrame(dst, packet []byte) []byte {
	return m.pair.Compressor.AppendFrame(dst, packet, m.player.Threshold)
}

// sendClient encrypts b in place when the client is, and writes it.
func (m *Move) sendClient(b []byte) {
	m.pair.Ciphers.Outbound(b, true)
	_ = m.pair.Client.Write(b)
}

// OldTraffic is the old backend's input during the move: it reports false
// while the session relays it as usual.
func (m *Move) OldTraffic() bool {
	old := m.pair.Old
	switch m.phase {
	case phDial, phLogin, phJoinWait:
		return false
	case phBoundary:
		buf, _ := old.Peek(-1)
		k, done := toBoundary(m.pair.S2C, buf)
		if k > 0 {
			m.pair.BytesS2C.Add(int64(k))
			m.sendClient(buf[:k])
			old.Discard(k)
		}
		if done {
			next := m.next
			m.next = nil
			next()
		}
		return true
	}
	old.Discard(-1) // after the switch started: for no one
	return true
}

// OldClosed tells the move that the old backend bc is gone (after its
// last bytes, as far as they go to the client).
func (m *Move) OldClosed(bc *reactor.Conn) {
	if m.phase <= phBoundary && !m.OldTraffic() {
		buf, _ := bc.Peek(-1)
		m.pair.S2C.Count(buf)
		m.pair.BytesS2C.Add(int64(len(buf)))
		m.sendClient(buf)
		bc.Discard(-1)
	}
	m.pair.Old = nil
	if m.phase == phBoundary { // the frame in flight ends nowhere
		m.lose(reasons.MoveLost, errors.New("the old backend closed inside a frame to the client"))
	}
}

// ClientTraffic is the client's input during the move: it reports false
// while the session relays it to the old backend as usual.
func (m *Move) ClientTraffic() bool {
	switch m.phase {
	case phAwaitAck:
		m.readClient()
	case phTail:
		m.readTail() // respawn.go
	default:
		return false
	}
	return true
}

// readClient takes the client's input after Start Configuration: the end
// of the frame in flight, then whole frames, play ones to the old backend
// while it is there, up to the acknowledgement.
func (m *Move) readClient() {
	c := m.pair.Client
	buf, _ := c.Peek(-1)
	if len(buf) == 0 {
		return
	}
	m.pair.Ciphers.Inbound(buf, true)
	k, done := toBoundary(m.pair.C2S, buf)
	m.toOld(buf[:k])
	if m.player.Configuring { // the old backend is gone: its frame in flight ends nowhere
		rest := append(m.in, buf[k:]...)
		c.Discard(-1)
		if done {
			m.switchOver(rest)
		}
		return
	}
	if len(m.in)+len(buf)-k > MaxQueuedBytes {
		c.Discard(-1)
		m.lose(reasons.MoveQueueFull, fmt.Errorf("the client sent over %d bytes without acknowledging the reconfiguration", MaxQueuedBytes))
		return
	}
	m.in = append(m.in, buf[k:]...)
	c.Discard(-1)
	off := 0
	for m.phase == phAwaitAck {
		n, hl, err := mc.SplitFrame(m.in[off:], mc.MaxFrameLength)
		if err == nil && n > 0 {
			var id int32
			if id, err = PacketID(m.in[off+hl:off+n], m.player.Threshold, m.pair.Compressor); err == nil && id == m.player.Packets.AcknowledgeConfiguration {
				m.switchOver(m.in[off+n:])
				return
			}
		}
		if err != nil {
			m.lose(reasons.MoveLost, fmt.Errorf("client frame during a move: %w", err))
			return
		}
		if n == 0 {
			break
		}
		if m.frames++; m.frames > MaxQueuedFrames {
			m.lose(reasons.MoveQueueFull, fmt.Errorf("the client sent %d frames without acknowledging the reconfiguration", MaxQueuedFrames))
			return
		}
		m.toOld(m.in[off : off+n])
		off += n
	}
	m.in = m.in[:copy(m.in, m.in[off:])]
}

// toOld writes b, the client's, to the old backend while it is there.
func (m *Move) toOld(b []byte) {
	if o := m.pair.Old; o != nil && len(b) > 0 && !o.Closing() {
		m.pair.BytesC2S.Add(int64(len(b)))
		_ = o.Write(b)
	}
}

// switchOver joins the client, now in configuration, to the new backend:
// Login Acknowledged in place of the client's acknowledgement, then what
// the client sent after it.
func (m *Move) switchOver(rest []byte) {
	m.scratch = m.scratch[:0]
	if m.player.Play == nil {
		m.scratch = m.pair.Compressor.AppendFrame(m.scratch, mc.AppendVarInt(nil, mc.PacketLoginAcknowledged), m.player.Threshold)
	}
	m.scratch = append(m.scratch, rest...)
	m.pair.BytesC2S.Add(int64(len(rest)))
	_ = m.bc.Write(m.scratch)
	*m.pair.C2S, *m.pair.S2C = mc.FrameCounter{}, mc.FrameCounter{}
	m.pair.C2S.Count(rest)
	m.in = nil
	m.pair.Client.Loop().Stop(&m.timer)
	if o := m.pair.Old; o != nil {
		o.Close()
		m.pair.Old = nil
	}
	m.phase = phSwitched
	m.player.Move, m.player.Configuring = nil, false
	m.host.Switched(m, m.bc)
	m.bc.ResumeRead()
	if m.target.Done != nil {
		m.target.Done(nil)
	}
}

// timedOut gives up: before the switch the player stays, after it the
// session ends.
func (m *Move) timedOut() {
	if m.phase == phAwaitAck || m.phase == phTail {
		m.lose(reasons.MoveTimeout, errors.New("the client did not acknowledge the reconfiguration in time"))
		return
	}
	m.fail(fmt.Errorf("backend %s: %w", m.target.Addr, errTimedOut))
}

// Abort abandons the move (its session ended).
func (m *Move) Abort() {
	if m.phase >= phSwitched {
		return
	}
	m.end()
	if m.target.Done != nil {
		m.target.Done(errors.New("the session ended during the move"))
	}
}

// end stops the move and closes the new backend.
func (m *Move) end() {
	m.phase = phOver
	m.player.Move = nil
	m.pair.Client.Loop().Stop(&m.timer)
	m.bc.Close()
}

// fail ends a move before the switch: the player is told why.
func (m *Move) fail(err error) {
	if m.phase >= phAwaitAck {
		return
	}
	if m.phase == phBoundary { // the notice cannot wait for the old backend's frame
		m.next = nil
	}
	m.end()
	if p := m.pair.S2C.Position(); m.pair.Old != nil && p.Shift == 0 && p.Remaining == 0 && !p.Broken {
		text := fmt.Sprintf("Could not send you to %s: %s", m.target.Group, Why(err))
		m.sendClient(m.appendFrame(nil, m.player.chat(text, "red")))
	}
	m.host.Failed(m, err)
	if m.target.Done != nil {
		m.target.Done(err)
	}
}

// lose ends a move after the switch started: the session ends.
func (m *Move) lose(r reasons.Reason, err error) {
	if m.phase >= phSwitched {
		return
	}
	m.end()
	m.host.Lost(m, r, err)
	if m.target.Done != nil {
		m.target.Done(err)
	}
}

// Why is what a player reads of why a move failed.
func Why(err error) string {
	var le *login.Error
	var de *reactor.DialError
	switch {
	case errors.As(err, &le) && le.RefusedJSON != nil:
		return "the server refused the login"
	case errors.As(err, &le) && le.Text != "":
		return le.Text
	case errors.As(err, &de) && de.Timeout:
		return "the server did not answer in time"
	case errors.As(err, &de):
		return "the server is not reachable"
	}
	return "the server did not take you in"
}
