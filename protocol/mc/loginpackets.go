package mc

import "encoding/binary"

// Bounds of the login packets' fields (those of vanilla and Velocity).
const (
	MaxChannelLen      = 32767 // an Identifier, such as velocity:player_info
	MaxPropertyNameLen = 64    // a profile property's name
	MaxPropertyLen     = 32767 // a profile property's value or signature
	MaxProperties      = 64    // profile properties one packet may carry (textures is the usual one)
	MaxDisconnectLen   = 262144
)

// PlayerKey is the chat-signing key a 1.19–1.19.2 client may send in Login
// Start; the slices alias the packet.
type PlayerKey struct {
	Expiry    int64  // unix milliseconds
	PublicKey []byte // DER
	Signature []byte
}

// LoginStart is a whole Login Start packet; the slices alias the packet.
type LoginStart struct {
	Name    []byte
	Key     *PlayerKey // 1.19–1.19.2, when the client sent one
	HasUUID bool       // 1.19.1+: whether UUID is set
	UUID    [16]byte
}

// ParseLoginStartAt decodes a whole Login Start frame body (ID and data) of
// protocol version v, the fields after the name included (LoginLayoutOf(v).Start),
// and refuses trailing bytes. Errors carry ReasonBadLoginStart. It allocates
// only the PlayerKey, when there is one.
func ParseLoginStartAt(body []byte, v int32) (LoginStart, error) {
	const packet = "login start"
	var ls LoginStart
	name, err := ParseLoginStart(body)
	if err != nil {
		return ls, err
	}
	ls.Name = name
	r := NewReader(body)
	_, _ = r.ReadVarInt()
	_, _ = r.ReadString(MaxUsernameLen)
	form := LoginLayoutOf(v).Start
	if form == StartSig || form == StartSigOptUUID {
		has, err := r.readBool()
		if err != nil {
			return ls, relabel(err, packet, ReasonBadLoginStart)
		}
		if has {
			if ls.Key, err = r.readPlayerKey(); err != nil {
				return ls, relabel(err, packet, ReasonBadLoginStart)
			}
		}
	}
	switch form {
	case StartSigOptUUID, StartOptUUID:
		if ls.HasUUID, err = r.readBool(); err != nil {
			return ls, relabel(err, packet, ReasonBadLoginStart)
		}
	case StartUUID:
		ls.HasUUID = true
	}
	if ls.HasUUID {
		if ls.UUID, err = r.readUUID(); err != nil {
			return ls, relabel(err, packet, ReasonBadLoginStart)
		}
	}
	if n := r.Remaining(); n != 0 {
		return ls, packetError(packet, ReasonBadLoginStart, kindTrailing, "login start", int64(n), 0)
	}
	return ls, nil
}

// AppendLoginStart appends the body (ID and data) of a Login Start of
// protocol version v to dst. Fields the version does not have are left
// out; a 1.20.2+ Login Start without a UUID carries the nil UUID.
func AppendLoginStart(dst []byte, v int32, ls LoginStart) []byte {
	dst = AppendVarInt(dst, PacketLoginStart)
	dst = AppendString(dst, ls.Name)
	form := LoginLayoutOf(v).Start
	if form == StartSig || form == StartSigOptUUID {
		dst = appendBool(dst, ls.Key != nil)
		if ls.Key != nil {
			dst = appendPlayerKey(dst, ls.Key)
		}
	}
	switch form {
	case StartSigOptUUID, StartOptUUID:
		dst = appendBool(dst, ls.HasUUID)
		if ls.HasUUID {
			dst = append(dst, ls.UUID[:]...)
		}
	case StartUUID:
		dst = append(dst, ls.UUID[:]...)
	}
	return dst
}

// Property is one profile property, such as textures; the slices alias the
// packet they came from.
type Property struct {
	Name, Value []byte
	Signed      bool
	Signature   []byte
}

// LoginSuccess is a whole Login Success packet; the slices alias the packet.
type LoginSuccess struct {
	UUID       [16]byte
	Name       []byte
	Properties []Property // 1.19+
	// StrictErrors is the strict-error-handling flag of 1.20.5–1.21.1.
	StrictErrors bool
}

// AppendLoginSuccess appends the body (ID and data) of a Login Success of
// protocol version v to dst, in the shape of LoginLayoutOf(v): the UUID as
// a hex or dashed String before 1.16, 16 bytes after; properties from 1.19
// (none when ls has none); the strict-error-handling flag in 1.20.5–1.21.1.
func AppendLoginSuccess(dst []byte, v int32, ls LoginSuccess) []byte {
	l := LoginLayoutOf(v)
	dst = AppendVarInt(dst, PacketLoginSuccess)
	switch l.SuccessUUID {
	case UUIDHex, UUIDDashed:
		var hex [36]byte
		dst = AppendString(dst, AppendUUID(hex[:0], ls.UUID, l.SuccessUUID == UUIDDashed))
	default:
		dst = append(dst, ls.UUID[:]...)
	}
	dst = AppendString(dst, ls.Name)
	if l.SuccessProps {
		dst = AppendProperties(dst, ls.Properties)
	}
	if l.SuccessStrict {
		dst = appendBool(dst, ls.StrictErrors)
	}
	return dst
}

// ParseLoginSuccess decodes a whole Login Success frame body of protocol
// version v. Errors carry ReasonBadLoginSuccess. It allocates the property
// slice when there are properties.
func ParseLoginSuccess(body []byte, v int32) (LoginSuccess, error) {
	const packet = "login success"
	var ls LoginSuccess
	fail := func(err error) (LoginSuccess, error) {
		return LoginSuccess{}, relabel(err, packet, ReasonBadLoginSuccess)
	}
	r := NewReader(body)
	id, err := r.ReadVarInt()
	if err != nil {
		return fail(err)
	}
	if id != PacketLoginSuccess {
		return ls, packetError(packet, ReasonBadLoginSuccess, kindUnexpected, "packet id", int64(id), PacketLoginSuccess)
	}
	l := LoginLayoutOf(v)
	if l.SuccessUUID == UUIDBinary {
		if ls.UUID, err = r.readUUID(); err != nil {
			return fail(err)
		}
	} else {
		s, err := r.ReadString(36)
		if err != nil {
			return fail(err)
		}
		u, ok := ParseUUID(s)
		if !ok {
			return ls, packetError(packet, ReasonBadLoginSuccess, kindInvalid, "uuid string of length", int64(len(s)), 0)
		}
		ls.UUID = u
	}
	if ls.Name, err = r.ReadString(MaxUsernameLen); err != nil {
		return fail(err)
	}
	if l.SuccessProps {
		if ls.Properties, err = r.readProperties(); err != nil {
			return fail(err)
		}
	}
	if l.SuccessStrict {
		if ls.StrictErrors, err = r.readBool(); err != nil {
			return fail(err)
		}
	}
	if n := r.Remaining(); n != 0 {
		return ls, packetError(packet, ReasonBadLoginSuccess, kindTrailing, "login success", int64(n), 0)
	}
	return ls, nil
}

// AppendSetCompression appends the body (ID and data) of Set Compression
// announcing threshold (negative: off) to dst.
func AppendSetCompression(dst []byte, threshold int32) []byte {
	dst = AppendVarInt(dst, PacketSetCompression)
	return AppendVarInt(dst, threshold)
}

// PluginRequest is a Login Plugin Request; the slices alias the packet.
type PluginRequest struct {
	MessageID int32
	Channel   []byte
	Data      []byte
}

// ParsePluginRequest decodes a Login Plugin Request frame body (ID 0x04).
// Errors carry ReasonBadPluginMessage.
func ParsePluginRequest(body []byte) (PluginRequest, error) {
	const packet = "login plugin request"
	var pr PluginRequest
	r := NewReader(body)
	id, err := r.ReadVarInt()
	if err != nil {
		return pr, relabel(err, packet, ReasonBadPluginMessage)
	}
	if id != PacketLoginPluginRequest {
		return pr, packetError(packet, ReasonBadPluginMessage, kindUnexpected, "packet id", int64(id), PacketLoginPluginRequest)
	}
	if pr.MessageID, err = r.ReadVarInt(); err != nil {
		return pr, relabel(err, packet, ReasonBadPluginMessage)
	}
	if pr.Channel, err = r.ReadString(MaxChannelLen); err != nil {
		return pr, relabel(err, packet, ReasonBadPluginMessage)
	}
	pr.Data = r.Rest()
	return pr, nil
}

// AppendPluginRequest appends the body of a Login Plugin Request to dst.
func AppendPluginRequest(dst []byte, pr PluginRequest) []byte {
	dst = AppendVarInt(dst, PacketLoginPluginRequest)
	dst = AppendVarInt(dst, pr.MessageID)
	dst = AppendString(dst, pr.Channel)
	return append(dst, pr.Data...)
}

// PluginResponse is a Login Plugin Response; Data aliases the packet.
type PluginResponse struct {
	MessageID  int32
	Successful bool // false: the client did not understand the channel, and Data is empty
	Data       []byte
}

// ParsePluginResponse decodes a Login Plugin Response frame body (ID
// 0x02). Errors carry ReasonBadPluginMessage; an unsuccessful answer with
// data is refused.
func ParsePluginResponse(body []byte) (PluginResponse, error) {
	const packet = "login plugin response"
	var pr PluginResponse
	r := NewReader(body)
	id, err := r.ReadVarInt()
	if err != nil {
		return pr, relabel(err, packet, ReasonBadPluginMessage)
	}
	if id != PacketLoginPluginResponse {
		return pr, packetError(packet, ReasonBadPluginMessage, kindUnexpected, "packet id", int64(id), PacketLoginPluginResponse)
	}
	if pr.MessageID, err = r.ReadVarInt(); err != nil {
		return pr, relabel(err, packet, ReasonBadPluginMessage)
	}
	if pr.Successful, err = r.readBool(); err != nil {
		return pr, relabel(err, packet, ReasonBadPluginMessage)
	}
	pr.Data = r.Rest()
	if !pr.Successful && len(pr.Data) > 0 {
		return pr, packetError(packet, ReasonBadPluginMessage, kindTrailing, "an unsuccessful answer", int64(len(pr.Data)), 0)
	}
	return pr, nil
}

// AppendPluginResponse appends the body of a Login Plugin Response to dst.
func AppendPluginResponse(dst []byte, pr PluginResponse) []byte {
	dst = AppendVarInt(dst, PacketLoginPluginResponse)
	dst = AppendVarInt(dst, pr.MessageID)
	dst = appendBool(dst, pr.Successful)
	if pr.Successful {
		dst = append(dst, pr.Data...)
	}
	return dst
}

// ParseLoginDisconnect returns the JSON text component of a login-state
// Disconnect frame body (ID 0x00), aliasing body. Errors carry
// ReasonBadDisconnect.
func ParseLoginDisconnect(body []byte) ([]byte, error) {
	const packet = "login disconnect"
	r := NewReader(body)
	id, err := r.ReadVarInt()
	if err != nil {
		return nil, relabel(err, packet, ReasonBadDisconnect)
	}
	if id != PacketLoginDisconnect {
		return nil, packetError(packet, ReasonBadDisconnect, kindUnexpected, "packet id", int64(id), PacketLoginDisconnect)
	}
	reason, err := r.ReadString(MaxDisconnectLen)
	if err != nil {
		return nil, relabel(err, packet, ReasonBadDisconnect)
	}
	return reason, nil
}

// AppendProperties appends a profile property array, a VarInt count and
// for each property its name, value, a Boolean and, when it is true, the
// signature, to dst.
func AppendProperties(dst []byte, props []Property) []byte {
	dst = AppendVarInt(dst, int32(len(props)))
	for _, p := range props {
		dst = AppendString(dst, p.Name)
		dst = AppendString(dst, p.Value)
		dst = appendBool(dst, p.Signed)
		if p.Signed {
			dst = AppendString(dst, p.Signature)
		}
	}
	return dst
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func appendPlayerKey(dst []byte, k *PlayerKey) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(k.Expiry))
	dst = AppendString(dst, k.PublicKey)
	return AppendString(dst, k.Signature)
}

// readBool reads a Boolean, refusing bytes other than 0 and 1.
func (r *Reader) readBool() (bool, error) {
	b, err := r.ReadBytes(1)
	if err != nil {
		return false, err
	}
	if b[0] > 1 {
		return false, newError(ReasonTruncated, kindInvalid, "boolean", int64(b[0]), 1)
	}
	return b[0] == 1, nil
}

func (r *Reader) readUUID() (u [16]byte, err error) {
	b, err := r.ReadBytes(16)
	if err != nil {
		return u, err
	}
	copy(u[:], b)
	return u, nil
}

func (r *Reader) readPlayerKey() (*PlayerKey, error) {
	var k PlayerKey
	var err error
	if k.Expiry, err = r.ReadInt64(); err != nil {
		return nil, err
	}
	if k.PublicKey, err = r.ReadString(maxLoginSigBytes); err != nil {
		return nil, err
	}
	if k.Signature, err = r.ReadString(maxLoginSigBytes); err != nil {
		return nil, err
	}
	return &k, nil
}

// readProperties reads a property array; the count is checked against
// MaxProperties and against the bytes left (each property takes at least
// three), so the slice it allocates is bounded by the input.
func (r *Reader) readProperties() ([]Property, error) {
	n, err := r.ReadVarInt()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, newError(ReasonNegativeLength, kindTooSmall, "property count", int64(n), 0)
	}
	if n > MaxProperties || int(n)*3 > r.Remaining() {
		return nil, newError(ReasonStringTooLong, kindTooLarge, "property count", int64(n), MaxProperties)
	}
	if n == 0 {
		return nil, nil
	}
	props := make([]Property, n)
	for i := range props {
		p := &props[i]
		if p.Name, err = r.ReadString(MaxPropertyNameLen); err != nil {
			return nil, err
		}
		if p.Value, err = r.ReadString(MaxPropertyLen); err != nil {
			return nil, err
		}
		if p.Signed, err = r.readBool(); err != nil {
			return nil, err
		}
		if p.Signed {
			if p.Signature, err = r.ReadString(MaxPropertyLen); err != nil {
				return nil, err
			}
		}
	}
	return props, nil
}
