package mc

import (
	"encoding/binary"
	"encoding/json"
	"unicode/utf8"
)

// ConfigPackets are the packet IDs a proxy needs to move a 1.20.2+ player
// between servers through the configuration state, at a range of protocol
// versions: one row of the table ConfigPacketsOf reads. Names follow
// minecraft-data's (internal/testkit/nodemc checks the table against it).
type ConfigPackets struct {
	From    int32  // the first protocol version of the row
	Release string // its first release, for messages

	// Play, clientbound.
	StartConfiguration int32 // start_configuration: the client leaves play for configuration
	PlayDisconnect     int32 // kick_disconnect
	SystemChat         int32 // system_chat
	PlayPluginCB       int32 // custom_payload
	PlayKeepAliveCB    int32 // keep_alive
	// Play, serverbound.
	AcknowledgeConfiguration int32 // configuration_acknowledged: the client is in configuration
	PlayPluginSB             int32
	PlayKeepAliveSB          int32
	// Configuration, clientbound.
	ConfigPluginCB        int32
	ConfigDisconnect      int32
	FinishConfigurationCB int32
	ConfigKeepAliveCB     int32
	// Configuration, serverbound.
	ConfigPluginSB        int32
	FinishConfigurationSB int32
	ConfigKeepAliveSB     int32

	// ChatNBT: text components (System Chat, Disconnect) are network NBT,
	// not JSON strings (1.20.3 and later).
	ChatNBT bool
}

// configPackets is every row from 1.20.2 on, by first version.
var configPackets = [...]ConfigPackets{
	{From: 764, Release: "1.20.2", StartConfiguration: 0x65, PlayDisconnect: 0x1b, SystemChat: 0x67, PlayPluginCB: 0x18, PlayKeepAliveCB: 0x24,
		AcknowledgeConfiguration: 0x0b, PlayPluginSB: 0x0f, PlayKeepAliveSB: 0x14,
		ConfigPluginCB: 0x00, ConfigDisconnect: 0x01, FinishConfigurationCB: 0x02, ConfigKeepAliveCB: 0x03,
		ConfigPluginSB: 0x01, FinishConfigurationSB: 0x02, ConfigKeepAliveSB: 0x03},
	{From: 765, Release: "1.20.3", StartConfiguration: 0x67, PlayDisconnect: 0x1b, SystemChat: 0x69, PlayPluginCB: 0x18, PlayKeepAliveCB: 0x24,
		AcknowledgeConfiguration: 0x0b, PlayPluginSB: 0x10, PlayKeepAliveSB: 0x15,
		ConfigPluginCB: 0x00, ConfigDisconnect: 0x01, FinishConfigurationCB: 0x02, ConfigKeepAliveCB: 0x03,
		ConfigPluginSB: 0x01, FinishConfigurationSB: 0x02, ConfigKeepAliveSB: 0x03, ChatNBT: true},
	{From: 766, Release: "1.20.5", StartConfiguration: 0x69, PlayDisconnect: 0x1d, SystemChat: 0x6c, PlayPluginCB: 0x19, PlayKeepAliveCB: 0x26,
		AcknowledgeConfiguration: 0x0c, PlayPluginSB: 0x12, PlayKeepAliveSB: 0x18,
		ConfigPluginCB: 0x01, ConfigDisconnect: 0x02, FinishConfigurationCB: 0x03, ConfigKeepAliveCB: 0x04,
		ConfigPluginSB: 0x02, FinishConfigurationSB: 0x03, ConfigKeepAliveSB: 0x04, ChatNBT: true},
	{From: 768, Release: "1.21.2", StartConfiguration: 0x70, PlayDisconnect: 0x1d, SystemChat: 0x73, PlayPluginCB: 0x19, PlayKeepAliveCB: 0x27,
		AcknowledgeConfiguration: 0x0e, PlayPluginSB: 0x14, PlayKeepAliveSB: 0x1a,
		ConfigPluginCB: 0x01, ConfigDisconnect: 0x02, FinishConfigurationCB: 0x03, ConfigKeepAliveCB: 0x04,
		ConfigPluginSB: 0x02, FinishConfigurationSB: 0x03, ConfigKeepAliveSB: 0x04, ChatNBT: true},
	{From: 770, Release: "1.21.5", StartConfiguration: 0x6f, PlayDisconnect: 0x1c, SystemChat: 0x72, PlayPluginCB: 0x18, PlayKeepAliveCB: 0x26,
		AcknowledgeConfiguration: 0x0e, PlayPluginSB: 0x14, PlayKeepAliveSB: 0x1a,
		ConfigPluginCB: 0x01, ConfigDisconnect: 0x02, FinishConfigurationCB: 0x03, ConfigKeepAliveCB: 0x04,
		ConfigPluginSB: 0x02, FinishConfigurationSB: 0x03, ConfigKeepAliveSB: 0x04, ChatNBT: true},
	{From: 771, Release: "1.21.6", StartConfiguration: 0x6f, PlayDisconnect: 0x1c, SystemChat: 0x72, PlayPluginCB: 0x18, PlayKeepAliveCB: 0x26,
		AcknowledgeConfiguration: 0x0f, PlayPluginSB: 0x15, PlayKeepAliveSB: 0x1b,
		ConfigPluginCB: 0x01, ConfigDisconnect: 0x02, FinishConfigurationCB: 0x03, ConfigKeepAliveCB: 0x04,
		ConfigPluginSB: 0x02, FinishConfigurationSB: 0x03, ConfigKeepAliveSB: 0x04, ChatNBT: true},
	{From: 773, Release: "1.21.9", StartConfiguration: 0x74, PlayDisconnect: 0x20, SystemChat: 0x77, PlayPluginCB: 0x18, PlayKeepAliveCB: 0x2b,
		AcknowledgeConfiguration: 0x0f, PlayPluginSB: 0x15, PlayKeepAliveSB: 0x1b,
		ConfigPluginCB: 0x01, ConfigDisconnect: 0x02, FinishConfigurationCB: 0x03, ConfigKeepAliveCB: 0x04,
		ConfigPluginSB: 0x02, FinishConfigurationSB: 0x03, ConfigKeepAliveSB: 0x04, ChatNBT: true},
	{From: 775, Release: "26.1", StartConfiguration: 0x76, PlayDisconnect: 0x20, SystemChat: 0x79, PlayPluginCB: 0x18, PlayKeepAliveCB: 0x2c,
		AcknowledgeConfiguration: 0x10, PlayPluginSB: 0x16, PlayKeepAliveSB: 0x1c,
		ConfigPluginCB: 0x01, ConfigDisconnect: 0x02, FinishConfigurationCB: 0x03, ConfigKeepAliveCB: 0x04,
		ConfigPluginSB: 0x02, FinishConfigurationSB: 0x03, ConfigKeepAliveSB: 0x04, ChatNBT: true},
}

// NewestConfigPackets is the newest protocol version the table was checked
// against (26.1); later versions get its last row, unchecked.
const NewestConfigPackets = 775

// ConfigPacketsOf returns the configuration-state packet IDs of protocol
// version v, and false below 1.20.2, which has no configuration state.
func ConfigPacketsOf(v int32) (ConfigPackets, bool) {
	if !HasConfigurationState(v) {
		return ConfigPackets{}, false
	}
	p := configPackets[0]
	for _, r := range configPackets[1:] {
		if v < r.From {
			break
		}
		p = r
	}
	return p, true
}

// AppendTextComponent appends a chat component holding text, in color
// when color is not empty, in the form protocol rows p uses: a JSON string
// before 1.20.3, network NBT (an unnamed compound) from then on.
func AppendTextComponent(dst []byte, p ConfigPackets, text, color string) []byte {
	if !p.ChatNBT {
		js, _ := json.Marshal(struct {
			Text  string `json:"text"`
			Color string `json:"color,omitempty"`
		}{text, color}) // strings always marshal
		return AppendString(dst, js)
	}
	dst = append(dst, nbtCompound)
	dst = appendNBTString(dst, "text", text)
	if color != "" {
		dst = appendNBTString(dst, "color", color)
	}
	return append(dst, nbtEnd)
}

// NBT tag types a text component uses.
const (
	nbtEnd      = 0
	nbtString   = 8
	nbtCompound = 10
)

// maxNBTString is the longest NBT string in bytes (its length is a uint16).
const maxNBTString = 1<<16 - 1

// appendNBTString appends a named string tag; the value is in Java's
// modified UTF-8 (NUL as C0 80, supplementary characters as surrogate
// pairs), cut at a character boundary to fit.
func appendNBTString(dst []byte, name, value string) []byte {
	dst = append(dst, nbtString)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(name)))
	dst = append(dst, name...)
	at := len(dst)
	dst = append(dst, 0, 0)
	n := 0
	for _, r := range value {
		var enc [6]byte
		k := modifiedUTF8(enc[:], r)
		if n+k > maxNBTString {
			break
		}
		dst = append(dst, enc[:k]...)
		n += k
	}
	binary.BigEndian.PutUint16(dst[at:], uint16(n))
	return dst
}

// modifiedUTF8 encodes r in Java's modified UTF-8 into b and returns the
// bytes used.
func modifiedUTF8(b []byte, r rune) int {
	switch {
	case r == 0:
		b[0], b[1] = 0xc0, 0x80
		return 2
	case r < utf8.RuneSelf:
		b[0] = byte(r)
		return 1
	case r > 0xffff:
		r -= 0x10000
		threeBytes(b, 0xd800+(r>>10)&0x3ff) // Go's encoder refuses surrogates
		threeBytes(b[3:], 0xdc00+r&0x3ff)
		return 6
	}
	return utf8.EncodeRune(b, r)
}

// threeBytes writes the 16-bit unit u as a 3-byte UTF-8 sequence.
func threeBytes(b []byte, u rune) {
	b[0] = 0xe0 | byte(u>>12)
	b[1] = 0x80 | byte(u>>6)&0x3f
	b[2] = 0x80 | byte(u)&0x3f
}

// AppendSystemChat appends the System Chat packet (ID and data) showing
// component, a chat component in the form of protocol rows p (see
// AppendTextComponent; a play Disconnect's reason of the same version is
// one), in the chat rather than above the hotbar.
func AppendSystemChat(dst []byte, p ConfigPackets, component []byte) []byte {
	dst = AppendVarInt(dst, p.SystemChat)
	dst = append(dst, component...)
	return append(dst, 0) // overlay: false
}
