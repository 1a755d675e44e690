package mcbackend

import (
	"errors"
	"fmt"

	"github.com/tidegate/tidegate/protocol/mc"
)

// phase is where a connection is in the protocol.
type phase uint8

const (
	phaseHandshake  phase = iota // waiting for the Handshake
	phaseStatus                  // waiting for Status Request or Ping
	phaseLoginStart              // waiting for Login Start
	phaseForwarding              // velocity forwarding: waiting for the answer to velocity:player_info
	phaseLoginAck                // 1.20.2+: Login Success sent, waiting for Login Acknowledged
	phaseConfig                  // 1.20.2+: Finish Configuration sent, waiting for its acknowledgement
	phasePlay                    // echoing frames
	phaseDone                    // status answered: the connection closes
)

// String returns the phase's log name.
func (p phase) String() string {
	switch p {
	case phaseHandshake:
		return "handshake"
	case phaseStatus:
		return "status"
	case phaseLoginStart:
		return "login_start"
	case phaseForwarding:
		return "forwarding"
	case phaseLoginAck:
		return "login_ack"
	case phaseConfig:
		return "configuration"
	case phasePlay:
		return "play"
	case phaseDone:
		return "done"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Reason is why the backend closed a connection on bad input; it is a
// stable, lower-case label.
type Reason uint8

// Reasons for closing a connection on bad input.
const (
	ReasonBadFrame         Reason = iota // a frame's length prefix was malformed or too large
	ReasonBadHandshake                   // the first packet was not a valid Handshake
	ReasonBadStatus                      // a status-state packet was malformed
	ReasonBadLoginStart                  // Login Start was malformed
	ReasonUnexpectedPacket               // a packet that has no place in the connection's state
	ReasonBadCompression                 // a compressed frame was malformed
	ReasonLegacyPing                     // a pre-1.7 server list ping (0xFE), which this backend does not answer
	ReasonBadChunkRequest                // a chunk request (Config.ChunkReplies) asked for a reply size out of range
	ReasonBadForwarding                  // the proxy's forwarding is missing or does not verify (Config.Forwarding)
	numReasons
)

var reasonNames = [numReasons]string{
	ReasonBadFrame:         "bad_frame",
	ReasonBadHandshake:     "bad_handshake",
	ReasonBadStatus:        "bad_status",
	ReasonBadLoginStart:    "bad_login_start",
	ReasonUnexpectedPacket: "unexpected_packet",
	ReasonBadCompression:   "bad_compression",
	ReasonLegacyPing:       "legacy_ping",
	ReasonBadChunkRequest:  "bad_chunk_request",
	ReasonBadForwarding:    "bad_forwarding",
}

// String returns the reason's label, such as "bad_handshake".
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// inputError is bad input from a client: the connection is closed and the
// reason counted. Its message is that of err; the reason is logged apart.
type inputError struct {
	reason Reason
	err    error
}

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

func badInput(r Reason, err error) error { return &inputError{reason: r, err: err} }

// reasonOf returns the Reason of an error returned by the machine.
func reasonOf(err error) Reason {
	var ie *inputError
	if errors.As(err, &ie) {
		return ie.reason
	}
	return ReasonUnexpectedPacket
}

// emitter receives the bytes the machine sends. *writev.Batch implements it.
type emitter interface {
	// Copy appends a copy of p.
	Copy(p []byte)
	// Add appends p, which stays valid until the output is written.
	Add(p []byte)
}

// machineConfig is what a machine reads from its server.
type machineConfig struct {
	threshold    int // compression threshold; negative when compression is off
	maxFrame     int
	maxLoginSize int
	skipJoinGame bool
	// joinDelayed leaves Login (play) to the session (JoinGameDelay).
	joinDelayed bool
	// chunkReplies answers chunk requests (see chunk.go) on connections
	// with plain framing.
	chunkReplies bool
	online       func() int64 // players in play, for the status JSON
	// statusProtocol is the protocol number of the status JSON; 0 for
	// the client's own.
	statusProtocol int32
	statusEnd      []byte // see statusJSONEnd
	forwarding     Forwarding
	secret         []byte // velocity forwarding
}

// machine is the protocol state of one connection, without its socket: it
// consumes buffered input and emits what the backend answers.
type machine struct {
	cfg      *machineConfig
	codec    *codec
	counters *loopCounters

	phase      phase
	compressed bool // both directions use the compressed framing
	protocol   int32
	forge      mc.ForgeKind
	statusSent bool
	joinHeld   bool // Login (play) is due after JoinGameDelay
	nameLen    uint8
	name       [mc.MaxUsernameLen]byte
	uuid       [16]byte // the offline-mode UUID of the name, or the forwarded one
	bungeeOK   bool     // the handshake address was in BungeeCord forwarding form

	// need is the buffered size the next frame requires before it can be
	// parsed, counted from the start of the unconsumed input; 0 when unknown.
	need int
}

func newMachine(cfg *machineConfig, k *codec, counters *loopCounters) machine {
	return machine{cfg: cfg, codec: k, counters: counters}
}

// username returns the name from Login Start, or nil before it.
func (m *machine) username() []byte { return m.name[:m.nameLen] }

// threshold returns the compression threshold in force on the connection,
// or -1 while frames are plain.
func (m *machine) threshold() int {
	if m.compressed {
		return m.cfg.threshold
	}
	return -1
}

// nextFrame locates the next whole frame in in with body length at most
// maxLen. ok is false when in holds only part of a frame; m.need then says
// how many bytes it takes, when the length prefix is complete.
func (m *machine) nextFrame(in []byte, maxLen int) (frameLen, headerLen int, ok bool, err error) {
	frameLen, headerLen, err = mc.SplitFrame(in, maxLen)
	if err != nil {
		return 0, 0, false, badInput(ReasonBadFrame, fmt.Errorf("frame header: %w", err))
	}
	if frameLen == 0 {
		if v, n, _ := mc.ReadVarInt(in); n > 0 {
			m.need = n + int(v)
		}
		return 0, 0, false, nil
	}
	m.need = 0
	return frameLen, headerLen, true, nil
}

// advance consumes the frames of in that come before play, emitting the
// answers, and returns the number of bytes consumed. It stops when in holds
// no whole frame, when play begins (the rest of in is play input) and when
// the status exchange is over.
func (m *machine) advance(in []byte, out emitter) (int, error) {
	consumed := 0
	for m.phase < phasePlay {
		rest := in[consumed:]
		if m.phase == phaseHandshake && len(rest) > 0 && rest[0] == 0xFE {
			return consumed, badInput(ReasonLegacyPing, errors.New("first byte 0xFE: pre-1.7 server list ping"))
		}
		frameLen, headerLen, ok, err := m.nextFrame(rest, m.cfg.maxLoginSize)
		if err != nil || !ok {
			return consumed, err
		}
		body := rest[headerLen:frameLen]
		consumed += frameLen
		if len(body) == 0 {
			continue // vanilla skips empty frames
		}
		if m.compressed {
			if body, err = m.codec.decodeFrame(body, m.cfg.threshold, m.cfg.maxLoginSize); err != nil {
				return consumed, badInput(ReasonBadCompression, err)
			}
		}
		if err := m.packet(body, out); err != nil {
			return consumed, err
		}
	}
	return consumed, nil
}

// packet handles one packet body (ID and data) received before play.
func (m *machine) packet(body []byte, out emitter) error {
	switch m.phase {
	case phaseHandshake:
		return m.handshake(body)
	case phaseStatus:
		return m.status(body, out)
	case phaseLoginStart:
		return m.loginStart(body, out)
	case phaseForwarding:
		return m.forwarded(body, out)
	case phaseLoginAck:
		id, _, err := mc.ParsePacketID(body)
		if err != nil {
			return badInput(ReasonUnexpectedPacket, fmt.Errorf("packet id in state %s: %w", m.phase, err))
		}
		if id != packetLoginAcknowledged {
			return badInput(ReasonUnexpectedPacket, fmt.Errorf("packet 0x%02x in state %s, want Login Acknowledged 0x%02x",
				id, m.phase, packetLoginAcknowledged))
		}
		m.emit(out, mc.AppendVarInt(m.codec.packet[:0], finishConfigurationID(m.protocol)))
		m.phase = phaseConfig
		return nil
	case phaseConfig:
		id, _, err := mc.ParsePacketID(body)
		if err != nil {
			return badInput(ReasonUnexpectedPacket, fmt.Errorf("packet id in state %s: %w", m.phase, err))
		}
		// Client Information, plugin messages, keep-alives, pongs and the
		// like may come first; only the acknowledgement matters here.
		if id == finishConfigurationID(m.protocol) {
			m.startPlay(out)
		}
		return nil
	}
	return badInput(ReasonUnexpectedPacket, fmt.Errorf("packet in state %s", m.phase))
}

func (m *machine) handshake(body []byte) error {
	h, err := mc.ParseHandshake(body)
	if err != nil {
		return badInput(ReasonBadHandshake, err)
	}
	m.protocol = h.ProtocolVersion
	m.forge = mc.ForgeMarker(h.Address)
	if _, _, uuid, _, ok := mc.ParseBungeeAddress(h.Address); ok {
		m.uuid, m.bungeeOK = mc.ParseUUID(uuid)
	}
	switch {
	case h.NextState == mc.NextStateStatus:
		m.phase = phaseStatus
	case h.NextState == mc.NextStateLogin,
		h.NextState == mc.NextStateTransfer && h.ProtocolVersion >= mc.Protocol1_20_5:
		m.phase = phaseLoginStart
	default:
		return badInput(ReasonBadHandshake, fmt.Errorf("handshake next state %d with protocol %d", h.NextState, h.ProtocolVersion))
	}
	return nil
}

func (m *machine) status(body []byte, out emitter) error {
	id, data, err := mc.ParsePacketID(body)
	if err != nil {
		return badInput(ReasonBadStatus, fmt.Errorf("status packet id: %w", err))
	}
	switch {
	case id == mc.PacketStatusRequest && !m.statusSent:
		if len(data) != 0 {
			return badInput(ReasonBadStatus, fmt.Errorf("status request with %d bytes of data, want none", len(data)))
		}
		k := m.codec
		// The JSON goes into frame as scratch, then becomes a string field of packet.
		v := m.protocol
		switch {
		case m.cfg.statusProtocol != 0:
			v = m.cfg.statusProtocol
		case v <= 0:
			v = unknownVersionStatusProtocol
		}
		k.frame = appendStatusJSON(k.frame[:0], v, m.cfg.online(), m.cfg.statusEnd)
		k.packet = mc.AppendVarInt(k.packet[:0], mc.PacketStatusResponse)
		k.packet = mc.AppendString(k.packet, k.frame)
		m.emit(out, k.packet)
		m.statusSent = true
		m.counters.statusRequests.Add(1)
		return nil
	case id == mc.PacketPing:
		payload, err := mc.ParsePing(body)
		if err != nil {
			return badInput(ReasonBadStatus, err)
		}
		m.codec.frame = mc.AppendPong(m.codec.frame[:0], payload)
		out.Copy(m.codec.frame)
		m.phase = phaseDone
		m.counters.pings.Add(1)
		return nil
	}
	return badInput(ReasonUnexpectedPacket, fmt.Errorf("status packet 0x%02x (status already sent: %t)", id, m.statusSent))
}

func (m *machine) loginStart(body []byte, out emitter) error {
	name, err := mc.ParseLoginStart(body)
	if err != nil {
		return badInput(ReasonBadLoginStart, err)
	}
	m.nameLen = uint8(copy(m.name[:], name))
	m.counters.loginStarts.Add(1)
	if m.cfg.forwarding != ForwardBungeeCord || !m.bungeeOK {
		m.uuid = mc.OfflineUUID(m.username())
	}
	if wait, err := m.startForwarded(out); wait || err != nil {
		return err
	}
	m.finishLogin(out)
	return nil
}

// finishLogin sends Set Compression (when on) and Login Success, and
// enters the configuration state or play.
func (m *machine) finishLogin(out emitter) {
	k := m.codec
	if m.cfg.threshold >= 0 && m.protocol >= protocol1_8 {
		m.emit(out, appendSetCompression(k.packet[:0], int32(m.cfg.threshold)))
		m.compressed = true
	}
	m.emit(out, mc.AppendLoginSuccess(k.packet[:0], m.protocol, mc.LoginSuccess{UUID: m.uuid, Name: m.username()}))
	if mc.HasConfigurationState(m.protocol) {
		m.phase = phaseLoginAck
		return
	}
	m.startPlay(out)
}

// startPlay enters play, sending Login (play) where the backend knows it.
func (m *machine) startPlay(out emitter) {
	m.phase = phasePlay
	if hasJoinGame(m.protocol) && !m.cfg.skipJoinGame {
		if m.cfg.joinDelayed {
			m.joinHeld = true
			return
		}
		m.emit(out, AppendJoinGame(m.codec.packet[:0]))
	}
}

// emit frames body (packet ID and data) for the connection and appends it
// to out. body may alias the codec's packet buffer.
func (m *machine) emit(out emitter, body []byte) {
	m.codec.frame = m.codec.appendFrame(m.codec.frame[:0], body, m.threshold())
	out.Copy(m.codec.frame)
}

// echo consumes whole play frames from in, as long as fewer than limit bytes
// have been consumed, and emits them back unchanged (compressed frames are
// checked, not inflated), all in one piece. A chunk request, when the
// backend answers them, is replaced by its reply, and the frames before it
// are emitted first; echo returns after the reply, so that the caller can
// write it and stop reading before it answers the next request (one reply
// may be MaxChunkReply bytes; one read may hold thousands of requests). It
// returns the bytes and frames consumed.
func (m *machine) echo(in []byte, limit int, out emitter) (consumed, frames int, err error) {
	threshold := m.threshold()
	chunks := m.cfg.chunkReplies && threshold < 0
	echoed := 0 // in[echoed:consumed] is echo not yet emitted
	for consumed < limit {
		rest := in[consumed:]
		frameLen, headerLen, ok, err := m.nextFrame(rest, m.cfg.maxFrame)
		if err != nil || !ok {
			out.Add(in[echoed:consumed])
			return consumed, frames, err
		}
		body := rest[headerLen:frameLen]
		if threshold >= 0 && len(body) > 0 {
			dataLength, _, err := mc.ParseCompressedHeader(body)
			if err == nil && dataLength != 0 && int(dataLength) < threshold {
				err = fmt.Errorf("compressed packet of %d bytes is below the threshold %d", dataLength, threshold)
			}
			if err != nil {
				out.Add(in[echoed:consumed])
				return consumed, frames, badInput(ReasonBadCompression, fmt.Errorf("play frame: %w", err))
			}
		}
		if chunks && isChunkRequest(body) {
			out.Add(in[echoed:consumed])
			echoed = consumed
			if err := m.emitChunkReply(out, body); err != nil {
				return consumed, frames, err
			}
			return consumed + frameLen, frames + 1, nil
		}
		consumed += frameLen
		frames++
	}
	out.Add(in[echoed:consumed])
	return consumed, frames, nil
}
