package mc

// PacketHandshake is the ID of the handshake packet, the first packet a
// client sends on a connection.
const PacketHandshake = 0x00

// Next states a handshake can request.
const (
	NextStateStatus   = 1 // server list ping
	NextStateLogin    = 2 // join the game
	NextStateTransfer = 3 // join after a transfer (1.20.5+)
)

// MaxHandshakeAddressLen bounds the server address field ParseHandshake
// accepts, in bytes. Hostnames are at most 255 bytes; the rest leaves room
// for Forge markers and similar suffixes.
const MaxHandshakeAddressLen = 1024

// Handshake is the decoded handshake packet.
type Handshake struct {
	ProtocolVersion int32
	// Address is the raw server address field with any NUL-separated
	// suffix (Forge marker, forwarding data) intact. When returned by
	// ParseHandshake it aliases the packet body.
	Address   []byte
	Port      uint16
	NextState int32
}

// ParseHandshake decodes a handshake from a frame body (packet ID and data).
// It requires packet ID 0x00, an address of at most MaxHandshakeAddressLen
// bytes and no trailing bytes, reporting violations with ReasonBadHandshake,
// and a next state of 1, 2 or 3, reporting others with ReasonBadNextState.
// It does not allocate on success.
func ParseHandshake(body []byte) (Handshake, error) {
	const packet = "handshake"
	var h Handshake
	r := NewReader(body)
	id, err := r.ReadVarInt()
	if err != nil {
		return Handshake{}, relabel(err, packet, ReasonBadHandshake)
	}
	if id != PacketHandshake {
		return Handshake{}, packetError(packet, ReasonBadHandshake, kindUnexpected, "packet id", int64(id), PacketHandshake)
	}
	if h.ProtocolVersion, err = r.ReadVarInt(); err != nil {
		return Handshake{}, relabel(err, packet, ReasonBadHandshake)
	}
	if h.Address, err = r.ReadString(MaxHandshakeAddressLen); err != nil {
		return Handshake{}, relabel(err, packet, ReasonBadHandshake)
	}
	if h.Port, err = r.ReadUint16(); err != nil {
		return Handshake{}, relabel(err, packet, ReasonBadHandshake)
	}
	if h.NextState, err = r.ReadVarInt(); err != nil {
		return Handshake{}, relabel(err, packet, ReasonBadHandshake)
	}
	if h.NextState < NextStateStatus || h.NextState > NextStateTransfer {
		return Handshake{}, packetError(packet, ReasonBadNextState, kindInvalid, "next state", int64(h.NextState), 0)
	}
	if n := r.Remaining(); n != 0 {
		return Handshake{}, packetError(packet, ReasonBadHandshake, kindTrailing, "next state", int64(n), 0)
	}
	return h, nil
}

// AppendHandshake appends h as a whole frame to dst and returns the extended
// slice. It does not validate h.
func AppendHandshake(dst []byte, h Handshake) []byte {
	n := VarIntLen(PacketHandshake) + VarIntLen(h.ProtocolVersion) +
		VarIntLen(int32(len(h.Address))) + len(h.Address) + 2 + VarIntLen(h.NextState)
	dst = AppendVarInt(dst, int32(n))
	dst = AppendVarInt(dst, PacketHandshake)
	dst = AppendVarInt(dst, h.ProtocolVersion)
	dst = AppendString(dst, h.Address)
	dst = append(dst, byte(h.Port>>8), byte(h.Port))
	return AppendVarInt(dst, h.NextState)
}
