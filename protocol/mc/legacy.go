package mc

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Before 1.7 a client asked for a server's status with packet 0xFE instead
// of a handshake (the "legacy" server list ping):
//
//   - Beta 1.8 to 1.3 send FE alone;
//   - 1.4 and 1.5 send FE 01;
//   - 1.6 sends FE 01, then a plugin message (FA) on the channel
//     "MC|PingHost" whose data is its protocol version, the host and the
//     port it connects to.
//
// All strings are a big-endian unsigned short count of UTF-16 code units,
// then the units, big-endian. The server answers with a kick packet (FF)
// carrying the status in its reason string (AppendLegacyKick) and closes.

// Legacy packet IDs.
const (
	LegacyPingID          = 0xFE // serverbound: server list ping
	LegacyKickID          = 0xFF // clientbound: kick (disconnect) with a reason string
	legacyPluginMessageID = 0xFA // serverbound plugin message, carries MC|PingHost in 1.6
)

// MaxLegacyPingHostLen bounds the host of a 1.6 ping, in UTF-16 code units:
// a DNS name has at most 253 characters.
const MaxLegacyPingHostLen = 255

// legacyPingChannel is the plugin channel of the 1.6 ping.
const legacyPingChannel = "MC|PingHost"

// legacyPingHeaderLen is FE 01 FA, the channel's length and its 11 UTF-16
// units, and the data length: what precedes the 1.6 ping's data.
const legacyPingHeaderLen = 3 + 2 + 2*len(legacyPingChannel) + 2

// Kick reason lengths the clients accept, in UTF-16 code units: Beta 1.8 to
// 1.3 read at most 100, 1.4 to 1.6 at most 256. A longer reason makes the
// client drop the answer, so AppendLegacyKick shortens the MOTD to fit.
const (
	maxLegacyKickBeta = 100
	maxLegacyKick     = 256
)

// LegacyPingKind tells the three forms of the legacy ping apart.
type LegacyPingKind uint8

// Legacy ping forms, by the client generation that sends them.
const (
	LegacyPingBeta LegacyPingKind = iota + 1 // FE: Beta 1.8 to 1.3
	LegacyPing14                             // FE 01: 1.4 and 1.5
	LegacyPing16                             // FE 01 FA "MC|PingHost" ...: 1.6
)

// String returns beta, 1.4 or 1.6.
func (k LegacyPingKind) String() string {
	switch k {
	case LegacyPingBeta:
		return "beta"
	case LegacyPing14:
		return "1.4"
	case LegacyPing16:
		return "1.6"
	}
	return "legacy(" + strconv.Itoa(int(k)) + ")"
}

// LegacyPing is a decoded legacy server list ping.
type LegacyPing struct {
	Kind LegacyPingKind
	// Protocol is the client's protocol version (1.6: 73 for 1.6.1 up to 78
	// for 1.6.4); 0 for the older forms, which do not say.
	Protocol byte
	// Host and Port are what a 1.6 client connects to; empty and 0 for the
	// older forms.
	Host string
	Port uint16
}

// ParseLegacyPing decodes a legacy ping at the start of a connection's
// input, as a server that speaks both protocols does. It returns the ping
// and the bytes it took; n == 0 with a nil error means b is the start of a
// 1.6 ping that is not whole yet.
//
// A lone FE is a Beta ping and FE 01 a 1.4 ping, but either may also be the
// start of a 1.6 ping whose next bytes have not arrived (1.6 clients write
// the ping a few bytes at a time): a caller that can wait a moment for more
// should, when n == len(b) and the kind is not LegacyPing16.
//
// Input that does not start like a legacy ping (a first byte other than FE,
// FE then anything but 01, FE 01 then anything but FA) returns
// ErrNotLegacyPing: it may be a modern frame whose VarInt length starts with
// 0xFE. A malformed 1.6 ping returns a ReasonBadLegacyPing error.
func ParseLegacyPing(b []byte) (p LegacyPing, n int, err error) {
	const packet = "legacy ping"
	switch {
	case len(b) == 0:
		return LegacyPing{}, 0, nil
	case b[0] != LegacyPingID:
		return LegacyPing{}, 0, packetError(packet, ReasonNotLegacyPing, kindUnexpected, "first byte", int64(b[0]), LegacyPingID)
	case len(b) == 1:
		return LegacyPing{Kind: LegacyPingBeta}, 1, nil
	case b[1] != 0x01:
		return LegacyPing{}, 0, packetError(packet, ReasonNotLegacyPing, kindUnexpected, "byte after 0xfe", int64(b[1]), 0x01)
	case len(b) == 2:
		return LegacyPing{Kind: LegacyPing14}, 2, nil
	case b[2] != legacyPluginMessageID:
		return LegacyPing{}, 0, packetError(packet, ReasonNotLegacyPing, kindUnexpected, "byte after 0xfe 0x01", int64(b[2]), legacyPluginMessageID)
	}
	// 1.6: the header, checked as far as it has arrived.
	if len(b) >= 5 {
		if l := binary.BigEndian.Uint16(b[3:]); l != uint16(len(legacyPingChannel)) {
			return LegacyPing{}, 0, packetError(packet, ReasonBadLegacyPing, kindUnexpected, "channel length", int64(l), int64(len(legacyPingChannel)))
		}
	}
	for i := 0; i < len(legacyPingChannel) && 5+2*i+1 < len(b); i++ {
		if u := binary.BigEndian.Uint16(b[5+2*i:]); u != uint16(legacyPingChannel[i]) {
			return LegacyPing{}, 0, packetError(packet, ReasonBadLegacyPing, kindUnexpected, "channel character "+strconv.Itoa(i), int64(u), int64(legacyPingChannel[i]))
		}
	}
	if len(b) < legacyPingHeaderLen {
		return LegacyPing{}, 0, nil
	}
	const minData, maxData = 1 + 2 + 4, 1 + 2 + 2*MaxLegacyPingHostLen + 4
	dataLen := int(binary.BigEndian.Uint16(b[legacyPingHeaderLen-2:]))
	switch {
	case dataLen < minData:
		return LegacyPing{}, 0, packetError(packet, ReasonBadLegacyPing, kindTooSmall, "data length", int64(dataLen), minData)
	case dataLen > maxData:
		return LegacyPing{}, 0, packetError(packet, ReasonBadLegacyPing, kindTooLarge, "data length", int64(dataLen), maxData)
	case len(b) < legacyPingHeaderLen+dataLen:
		return LegacyPing{}, 0, nil
	}
	data := b[legacyPingHeaderLen : legacyPingHeaderLen+dataLen]
	hostLen := int(binary.BigEndian.Uint16(data[1:]))
	if want := (dataLen - minData) / 2; hostLen != want || (dataLen-minData)%2 != 0 {
		return LegacyPing{}, 0, packetError(packet, ReasonBadLegacyPing, kindUnexpected, "host length", int64(hostLen), int64(want))
	}
	port := int32(binary.BigEndian.Uint32(data[3+2*hostLen:]))
	if port < 0 || port > 65535 {
		return LegacyPing{}, 0, packetError(packet, ReasonBadLegacyPing, kindInvalid, "port", int64(port), 0)
	}
	units := make([]uint16, hostLen)
	for i := range units {
		units[i] = binary.BigEndian.Uint16(data[3+2*i:])
	}
	return LegacyPing{
		Kind:     LegacyPing16,
		Protocol: data[0],
		Host:     string(utf16.Decode(units)),
		Port:     uint16(port),
	}, legacyPingHeaderLen + dataLen, nil
}

// AppendLegacyPing appends the bytes a client of kind p.Kind sends for p to
// dst and returns the extended slice: the inverse of ParseLegacyPing, for
// tests and tools. A host longer than MaxLegacyPingHostLen UTF-16 units is
// cut there.
func AppendLegacyPing(dst []byte, p LegacyPing) []byte {
	dst = append(dst, LegacyPingID)
	switch p.Kind {
	case LegacyPingBeta:
		return dst
	case LegacyPing14:
		return append(dst, 0x01)
	}
	host := utf16.Encode([]rune(p.Host))
	if len(host) > MaxLegacyPingHostLen {
		host = host[:MaxLegacyPingHostLen]
	}
	dst = append(dst, 0x01, legacyPluginMessageID)
	dst = appendUTF16(dst, utf16.Encode([]rune(legacyPingChannel)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(1+2+2*len(host)+4))
	dst = append(dst, p.Protocol)
	dst = appendUTF16(dst, host)
	return binary.BigEndian.AppendUint32(dst, uint32(p.Port))
}

// appendUTF16 appends units as a legacy string: their count, then each unit,
// big-endian.
func appendUTF16(dst []byte, units []uint16) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(units)))
	for _, u := range units {
		dst = binary.BigEndian.AppendUint16(dst, u)
	}
	return dst
}

// LegacyStatus is what a server tells a legacy ping.
type LegacyStatus struct {
	// Protocol is the server's protocol version. A 1.4–1.6 client whose own
	// version differs lists the server as incompatible and shows Version
	// instead of the player counts.
	Protocol int32
	// Version is the server's version name (1.4 and later show it).
	Version string
	// MOTD is the description as legacy text: § formatting codes, one line.
	MOTD string
	// Online and Max are the player counts.
	Online, Max int64
}

// AppendLegacyKick appends the kick packet answering a legacy ping of kind k
// with st to dst and returns the extended slice. Beta pings get
// "motd§online§max" (the MOTD without its § codes, since § separates the
// fields); 1.4 and later get "§1\0protocol\0version\0motd\0online\0max".
// Line breaks in the MOTD become spaces and NULs are dropped from the text
// fields; the MOTD is shortened so that the reason fits what the client
// reads (100 UTF-16 units for Beta pings, 256 for the others).
func AppendLegacyKick(dst []byte, k LegacyPingKind, st LegacyStatus) []byte {
	motd := strings.Map(func(r rune) rune {
		switch r {
		case '\n', '\r':
			return ' '
		case 0:
			return -1
		}
		return r
	}, st.MOTD)
	version := strings.ReplaceAll(st.Version, "\x00", "")
	online, maxPlayers := strconv.FormatInt(st.Online, 10), strconv.FormatInt(st.Max, 10)
	var pre, post string
	limit := maxLegacyKick
	if k == LegacyPingBeta {
		motd = StripCodes(motd)
		pre, post = "", "§"+online+"§"+maxPlayers
		limit = maxLegacyKickBeta
	} else {
		pre = "§1\x00" + strconv.FormatInt(int64(st.Protocol), 10) + "\x00" + version + "\x00"
		post = "\x00" + online + "\x00" + maxPlayers
	}
	head, tail := utf16.Encode([]rune(pre)), utf16.Encode([]rune(post))
	if room := limit - len(head) - len(tail); room < 0 {
		// Only an absurd version name gets here: drop it rather than the counts.
		head = utf16.Encode([]rune("§1\x00" + strconv.FormatInt(int64(st.Protocol), 10) + "\x00\x00"))
		motd = ""
	} else {
		motd = truncateUTF16(motd, room)
	}
	units := append(append(head, utf16.Encode([]rune(motd))...), tail...)
	dst = append(dst, LegacyKickID)
	return appendUTF16(dst, units)
}

// truncateUTF16 shortens s to at most n UTF-16 code units without cutting a
// character in two or leaving a lone § (a formatting code without its letter).
func truncateUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := utf16.RuneLen(r)
		if w < 0 {
			w = 1 // invalid UTF-8 becomes U+FFFD, one unit
		}
		if units+w > n {
			return strings.TrimSuffix(s[:i], "§")
		}
		units += w
	}
	return s
}

// ParseLegacyKick decodes a kick packet (FF and its reason) at the start of
// b and returns the reason and the bytes it took; n == 0 with a nil error
// means the packet is not whole yet. It is the client side of
// AppendLegacyKick, for tests and tools.
func ParseLegacyKick(b []byte) (reason string, n int, err error) {
	const packet = "legacy kick"
	switch {
	case len(b) == 0:
		return "", 0, nil
	case b[0] != LegacyKickID:
		return "", 0, packetError(packet, ReasonBadLegacyPing, kindUnexpected, "packet id", int64(b[0]), LegacyKickID)
	case len(b) < 3:
		return "", 0, nil
	}
	l := int(binary.BigEndian.Uint16(b[1:]))
	if len(b) < 3+2*l {
		return "", 0, nil
	}
	units := make([]uint16, l)
	for i := range units {
		units[i] = binary.BigEndian.Uint16(b[3+2*i:])
	}
	return string(utf16.Decode(units)), 3 + 2*l, nil
}

// StripCodes removes § formatting codes (§ and the character after it) from s.
func StripCodes(s string) string {
	if !strings.Contains(s, "§") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		i += w
		if r == '§' {
			if i < len(s) {
				_, w = utf8.DecodeRuneInString(s[i:])
				i += w
			}
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
