package bungeemsg

import (
	"encoding/binary"
	"strings"
)

// The channel names: LegacyChannel before 1.13, ModernChannel from 1.13
// (protocol ModernFrom) on. A backend may use either; Paper and Spigot
// rename LegacyChannel to ModernChannel for 1.13 and later.
const (
	LegacyChannel = "BungeeCord"
	ModernChannel = "bungeecord:main"
	ModernFrom    = 393
)

// MaxPayload bounds a payload ParseRequest reads: the most a clientbound
// plugin message can carry (1 MiB from 1.8 on).
const MaxPayload = 1 << 20

// MaxData bounds Forward's data: its length is a Java short, and a negative
// one is not read by DataInput.
const MaxData = 0x7fff

// IsChannel reports whether a plugin message's channel is the BungeeCord
// channel, in either name.
func IsChannel(channel string) bool { return channel == LegacyChannel || channel == ModernChannel }

// Channel returns the BungeeCord channel's name for protocol version v.
func Channel(v int32) string {
	if v >= ModernFrom {
		return ModernChannel
	}
	return LegacyChannel
}

// All is the server name that means every server (PlayerCount, PlayerList,
// Forward) or every player (Message, MessageRaw).
const All = "ALL"

// Sub is a subchannel: what a message asks or answers.
type Sub uint8

// The subchannels.
const (
	SubUnknown Sub = iota
	Connect
	ConnectOther
	IP
	IPOther
	PlayerCount
	PlayerList
	GetServers
	GetServer
	GetPlayerServer
	UUID
	UUIDOther
	ServerIP
	Message
	MessageRaw
	KickPlayer
	KickPlayerRaw
	Forward
	ForwardToPlayer
	numSubs
)

var subNames = [numSubs]string{
	SubUnknown: "unknown", Connect: "Connect", ConnectOther: "ConnectOther", IP: "IP", IPOther: "IPOther",
	PlayerCount: "PlayerCount", PlayerList: "PlayerList", GetServers: "GetServers", GetServer: "GetServer",
	GetPlayerServer: "GetPlayerServer", UUID: "UUID", UUIDOther: "UUIDOther", ServerIP: "ServerIP",
	Message: "Message", MessageRaw: "MessageRaw", KickPlayer: "KickPlayer", KickPlayerRaw: "KickPlayerRaw",
	Forward: "Forward", ForwardToPlayer: "ForwardToPlayer",
}

// String returns the subchannel's name as it is on the wire ("unknown" for
// SubUnknown).
func (s Sub) String() string {
	if s < numSubs {
		return subNames[s]
	}
	return "unknown"
}

// SubOf returns the subchannel named name (case matters, as in
// BungeeCord), or SubUnknown.
func SubOf(name string) Sub {
	for s := Connect; s < numSubs; s++ {
		if subNames[s] == name {
			return s
		}
	}
	return SubUnknown
}

// Subs lists the known subchannels, in order.
func Subs() []Sub {
	out := make([]Sub, 0, numSubs-1)
	for s := Connect; s < numSubs; s++ {
		out = append(out, s)
	}
	return out
}

// Msg is one message of the channel, a request or a response; which
// fields a subchannel carries, and in which order, is in the tables
// requestFields and responseFields (and in each field's comment).
type Msg struct {
	Sub Sub
	// Server is a server (group) name: the target of Connect,
	// ConnectOther, PlayerCount, PlayerList, ServerIP and Forward; the
	// answer of GetServer and GetPlayerServer; the name PlayerCount,
	// PlayerList and ServerIP answer for.
	Server string
	// Player is a player's name: the one ConnectOther moves, IPOther,
	// UUIDOther and GetPlayerServer ask about, Message and MessageRaw
	// write to (All: everyone), KickPlayer kicks and ForwardToPlayer
	// forwards to; and the one their answers are about.
	Player string
	// Text is Message's legacy text, MessageRaw's JSON chat component,
	// KickPlayer's reason; in answers, PlayerList's and GetServers' names
	// joined by ", " (JoinNames).
	Text string
	// Channel is the channel Forward and ForwardToPlayer forward on.
	Channel string
	// Data is what Forward and ForwardToPlayer forward; it aliases the
	// parsed payload.
	Data []byte
	// UUID is the UUID answer of UUID and UUIDOther: 32 hex digits.
	UUID string
	// Host is the address answer of IP, IPOther (the player's) and
	// ServerIP (the server's): an IP address or host name.
	Host string
	// Count is PlayerCount's answer; Port is the port answer of IP and
	// IPOther (a Java int) and of ServerIP (an unsigned short).
	Count int32
	Port  int32
}

// field is one field of a message, in its order on the wire.
type field uint8

const (
	fServer field = iota + 1
	fPlayer
	fText
	fChannel
	fData // a big-endian short length, then the bytes
	fUUID
	fHost
	fCount // a big-endian int
	fPort  // a big-endian int
	fPort16
)

var fieldNames = [...]string{fServer: "server", fPlayer: "player", fText: "text", fChannel: "channel", fData: "data",
	fUUID: "uuid", fHost: "host", fCount: "count", fPort: "port", fPort16: "port"}

// requestFields are what a backend sends, after the subchannel's name.
var requestFields = [numSubs][]field{
	Connect: {fServer}, ConnectOther: {fPlayer, fServer}, IP: {}, IPOther: {fPlayer},
	PlayerCount: {fServer}, PlayerList: {fServer}, GetServers: {}, GetServer: {},
	GetPlayerServer: {fPlayer}, UUID: {}, UUIDOther: {fPlayer}, ServerIP: {fServer},
	Message: {fPlayer, fText}, MessageRaw: {fPlayer, fText}, KickPlayer: {fPlayer, fText}, KickPlayerRaw: {fPlayer, fText},
	Forward: {fServer, fChannel, fData}, ForwardToPlayer: {fPlayer, fChannel, fData},
}

// responseFields are what the proxy answers, after the subchannel's name;
// nil for a subchannel it does not answer.
var responseFields = [numSubs][]field{
	IP: {fHost, fPort}, IPOther: {fPlayer, fHost, fPort},
	PlayerCount: {fServer, fCount}, PlayerList: {fServer, fText}, GetServers: {fText},
	GetServer: {fServer}, GetPlayerServer: {fPlayer, fServer},
	UUID: {fUUID}, UUIDOther: {fPlayer, fUUID}, ServerIP: {fServer, fHost, fPort16},
}

// Answers reports whether the proxy answers the subchannel s.
func (s Sub) Answers() bool { return s < numSubs && responseFields[s] != nil }

// ParseRequest reads a payload a backend sent on the BungeeCord channel.
// Bytes past the subchannel's last field are ignored, as BungeeCord and
// Velocity ignore them. An unknown subchannel is an error of
// ErrUnknownSub whose Msg is SubUnknown.
func ParseRequest(p []byte) (Msg, error) {
	m, err := parse(p, &requestFields)
	return m, public(err)
}

// ParseResponse reads a payload the proxy wrote (AppendResponse); a fake
// backend's reading of the answers.
func ParseResponse(p []byte) (Msg, error) {
	m, err := parse(p, &responseFields)
	if err == nil && !m.Sub.Answers() {
		return Msg{}, public(errorf(ErrNoResponse, "%s has no response", m.Sub))
	}
	return m, public(err)
}

func parse(p []byte, table *[numSubs][]field) (Msg, error) {
	if len(p) > MaxPayload {
		return Msg{}, errorf(ErrTooLong, "payload of %d bytes is over %d", len(p), MaxPayload)
	}
	r := reader{p: p}
	name, err := r.utf()
	if err != nil {
		return Msg{}, within(err, "subchannel")
	}
	m := Msg{Sub: SubOf(name)}
	if m.Sub == SubUnknown {
		return m, errorf(ErrUnknownSub, "unknown subchannel %.64q", name)
	}
	for _, f := range table[m.Sub] {
		if err := r.field(&m, f); err != nil {
			return Msg{}, within(err, "%s: %s", m.Sub, fieldNames[f])
		}
	}
	return m, nil
}

// reader reads fields from p at off.
type reader struct {
	p   []byte
	off int
}

func (r *reader) need(n int, what string) error {
	if len(r.p)-r.off < n {
		return errorf(ErrShort, "%s of %d bytes at offset %d, only %d left", what, n, r.off, len(r.p)-r.off)
	}
	return nil
}

func (r *reader) u16() (int, error) {
	if err := r.need(2, "length"); err != nil {
		return 0, err
	}
	v := int(binary.BigEndian.Uint16(r.p[r.off:]))
	r.off += 2
	return v, nil
}

func (r *reader) utf() (string, error) {
	n, err := r.u16()
	if err != nil {
		return "", err
	}
	if err := r.need(n, "string"); err != nil {
		return "", err
	}
	s, err := decodeModified(r.p[r.off : r.off+n])
	if err != nil {
		return "", within(err, "string at offset %d", r.off)
	}
	r.off += n
	return s, nil
}

// str returns m's string field f, nil for a field that is not a string.
func (m *Msg) str(f field) *string {
	switch f {
	case fServer:
		return &m.Server
	case fPlayer:
		return &m.Player
	case fText:
		return &m.Text
	case fChannel:
		return &m.Channel
	case fUUID:
		return &m.UUID
	case fHost:
		return &m.Host
	}
	return nil
}

func (r *reader) field(m *Msg, f field) error {
	if p := m.str(f); p != nil {
		s, err := r.utf()
		*p = s
		return err
	}
	switch f {
	case fData:
		n, err := r.u16()
		if err != nil {
			return err
		}
		if n > MaxData {
			return errorf(ErrBadLength, "length 0x%04x is a negative short", n)
		}
		if err := r.need(n, "data"); err != nil {
			return err
		}
		m.Data = r.p[r.off : r.off+n : r.off+n]
		r.off += n
	case fCount, fPort:
		if err := r.need(4, "int"); err != nil {
			return err
		}
		v := int32(binary.BigEndian.Uint32(r.p[r.off:]))
		r.off += 4
		if f == fCount {
			m.Count = v
		} else {
			m.Port = v
		}
	default: // fPort16
		n, err := r.u16()
		m.Port = int32(n)
		return err
	}
	return nil
}

// AppendRequest appends m as a backend sends it. It fails, appending
// nothing, for SubUnknown or a field the format cannot carry.
func AppendRequest(dst []byte, m Msg) ([]byte, error) {
	out, err := appendMsg(dst, m, &requestFields)
	return out, public(err)
}

// AppendResponse appends m as the proxy answers a backend. It fails,
// appending nothing, for a subchannel the proxy does not answer or a field
// the format cannot carry (a string over MaxUTF bytes: a PlayerList of some
// 3,600 names, say).
func AppendResponse(dst []byte, m Msg) ([]byte, error) {
	if !m.Sub.Answers() {
		return dst, public(errorf(ErrNoResponse, "%s has no response", m.Sub))
	}
	out, err := appendMsg(dst, m, &responseFields)
	return out, public(err)
}

func appendMsg(dst []byte, m Msg, table *[numSubs][]field) ([]byte, error) {
	if m.Sub == SubUnknown || m.Sub >= numSubs {
		return dst, errorf(ErrUnknownSub, "unknown subchannel %d", m.Sub)
	}
	out, err := appendUTF(dst, m.Sub.String())
	for _, f := range table[m.Sub] {
		if err != nil {
			break
		}
		if out, err = appendField(out, m, f); err != nil {
			err = within(err, "%s: %s", m.Sub, fieldNames[f])
		}
	}
	if err != nil {
		return dst, err
	}
	return out, nil
}

func appendField(dst []byte, m Msg, f field) ([]byte, error) {
	if p := m.str(f); p != nil {
		return appendUTF(dst, *p)
	}
	switch f {
	case fData:
		if len(m.Data) > MaxData {
			return dst, errorf(ErrTooLong, "%d bytes, over %d", len(m.Data), MaxData)
		}
		return append(binary.BigEndian.AppendUint16(dst, uint16(len(m.Data))), m.Data...), nil
	case fCount:
		return binary.BigEndian.AppendUint32(dst, uint32(m.Count)), nil
	case fPort:
		return binary.BigEndian.AppendUint32(dst, uint32(m.Port)), nil
	default: // fPort16
		if m.Port < 0 || m.Port > 0xffff {
			return dst, errorf(ErrBadField, "port %d is not 0-65535", m.Port)
		}
		return binary.BigEndian.AppendUint16(dst, uint16(m.Port)), nil
	}
}

// JoinNames joins names as PlayerList and GetServers answer them: with
// ", " between them, as BungeeCord's and Velocity's answers are, and as
// the plugins that read them split.
func JoinNames(names []string) string { return strings.Join(names, ", ") }

// SplitNames splits a PlayerList or GetServers answer; "" is no names.
func SplitNames(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ", ")
}
