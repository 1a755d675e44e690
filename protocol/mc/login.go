package mc

// Login state packet IDs.
const (
	PacketLoginStart        = 0x00 // serverbound: username (and more)
	PacketLoginDisconnect   = 0x00 // clientbound: JSON text component
	PacketEncryptionRequest = 0x01 // clientbound: online mode; the stream is encrypted afterwards
	PacketLoginSuccess      = 0x02 // clientbound: login finished
	PacketSetCompression    = 0x03 // clientbound: compressed framing follows
)

// MaxUsernameLen is the longest username ParseLoginStart accepts, in bytes.
const MaxUsernameLen = 16

// ParseLoginStart decodes the username, the first field of a login start
// packet, from a frame body (packet ID and data). It requires packet ID 0x00
// and a name of 1 to MaxUsernameLen bytes, reporting violations with
// ReasonBadLoginStart. The fields after the name vary by version (signature
// data in 1.19–1.19.2, a UUID from 1.19.1 on, optional until 1.20.2) and are
// ignored. username aliases body, and ParseLoginStart does not allocate on
// success.
func ParseLoginStart(body []byte) (username []byte, err error) {
	const packet = "login start"
	r := NewReader(body)
	id, err := r.ReadVarInt()
	if err != nil {
		return nil, relabel(err, packet, ReasonBadLoginStart)
	}
	if id != PacketLoginStart {
		return nil, packetError(packet, ReasonBadLoginStart, kindUnexpected, "packet id", int64(id), PacketLoginStart)
	}
	username, err = r.ReadString(MaxUsernameLen)
	if err != nil {
		return nil, relabel(err, packet, ReasonBadLoginStart)
	}
	if len(username) == 0 {
		return nil, packetError(packet, ReasonBadLoginStart, kindTooSmall, "username length", 0, 1)
	}
	return username, nil
}

// ParseSetCompression decodes the threshold from a Set Compression frame
// body (packet ID 0x03 and a VarInt). Frames after it use the compressed
// format; see ParseCompressedHeader. A negative threshold disables
// compression.
func ParseSetCompression(body []byte) (threshold int32, err error) {
	const packet = "set compression"
	r := NewReader(body)
	id, err := r.ReadVarInt()
	if err != nil {
		return 0, relabel(err, packet, ReasonBadSetCompression)
	}
	if id != PacketSetCompression {
		return 0, packetError(packet, ReasonBadSetCompression, kindUnexpected, "packet id", int64(id), PacketSetCompression)
	}
	if threshold, err = r.ReadVarInt(); err != nil {
		return 0, relabel(err, packet, ReasonBadSetCompression)
	}
	if n := r.Remaining(); n != 0 {
		return 0, packetError(packet, ReasonBadSetCompression, kindTrailing, "threshold", int64(n), 0)
	}
	return threshold, nil
}

// AppendLoginDisconnect appends a whole login-state Disconnect frame
// carrying reasonJSON, a JSON text component such as {"text":"Bye"}, to dst
// and returns the extended slice.
func AppendLoginDisconnect(dst []byte, reasonJSON []byte) []byte {
	return appendStringPacket(dst, PacketLoginDisconnect, reasonJSON)
}

// Protocol versions whose Login Start carries the player's UUID.
const (
	ProtocolLoginUUIDOptional = 760 // 1.19.1: signature data, then an optional UUID
	ProtocolLoginUUIDNoSig    = 761 // 1.19.3: an optional UUID, no signature data
	ProtocolLoginUUID         = 764 // 1.20.2: always a UUID
)

// maxLoginSigBytes bounds the public key and signature skipped in a 1.19.1
// Login Start (vanilla sends 294 and 512 bytes).
const maxLoginSigBytes = 4096

// LoginStartUUID returns the UUID a Login Start frame body of protocol
// version v carries after the name: always from 1.20.2 (764), when its
// presence flag says so from 1.19.1 (760, after the optional signature
// data). ok is false for older versions, for the nil UUID (all zeros, which
// some bots send) and for a body ParseLoginStart refuses or whose fields
// after the name are malformed or truncated: the UUID is then unknown,
// which refuses nothing.
func LoginStartUUID(body []byte, v int32) (u [16]byte, ok bool) {
	if v < ProtocolLoginUUIDOptional {
		return u, false
	}
	r := NewReader(body)
	if id, err := r.ReadVarInt(); err != nil || id != PacketLoginStart {
		return u, false
	}
	if name, err := r.ReadString(MaxUsernameLen); err != nil || len(name) == 0 {
		return u, false
	}
	flag := func() (bool, bool) {
		b, err := r.ReadBytes(1)
		if err != nil || b[0] > 1 {
			return false, false
		}
		return b[0] == 1, true
	}
	if v == ProtocolLoginUUIDOptional {
		sig, good := flag()
		if !good {
			return u, false
		}
		if sig {
			if _, err := r.ReadInt64(); err != nil { // key expiry
				return u, false
			}
			for range 2 { // public key, signature
				n, err := r.ReadVarInt()
				if err != nil || n < 0 || n > maxLoginSigBytes {
					return u, false
				}
				if _, err := r.ReadBytes(int(n)); err != nil {
					return u, false
				}
			}
		}
	}
	if v < ProtocolLoginUUID {
		if has, good := flag(); !good || !has {
			return u, false
		}
	}
	b, err := r.ReadBytes(16)
	if err != nil {
		return u, false
	}
	copy(u[:], b)
	return u, u != [16]byte{}
}
