package play

import (
	"bytes"
	"encoding/binary"
	"encoding/json"

	"github.com/tidegate/tidegate/protocol/mc"
)

// Worlds a respawn into "another dimension" names from 1.16, where a
// dimension is a world identifier: the overworld, or the nether when the
// player's world is the overworld. The dimension type stays the server's,
// so the client knows it.
var (
	overworld = []byte("minecraft:overworld")
	nether    = []byte("minecraft:the_nether")
)

// AppendRespawn appends the Respawn packet (ID and data) of protocol rows
// p that puts the client in the world j describes, or, with other, in a
// different dimension (before 1.16 the nether, or the overworld when j is
// the nether; from 1.16 another world name with j's dimension type). A
// switch sends Join Game, Respawn(other), Respawn: the client drops the
// old server's world on each change of dimension.
func AppendRespawn(dst []byte, p Packets, j JoinGame, other bool) []byte {
	dst = mc.AppendVarInt(dst, p.Respawn)
	if p.Layout <= Layout1912 {
		dim := j.Dimension
		if other {
			dim = map[bool]int32{true: -1, false: 0}[dim == 0]
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(dim))
		dst = append(dst, j.Difficulty, j.GameMode&^0x08) // no hardcore bit in Respawn
		return appendString(dst, string(j.LevelType))
	}
	if p.Layout >= Layout1193 {
		dst = appendString(dst, string(j.DimensionType))
	} else {
		dst = append(dst, j.DimensionType...)
	}
	world := j.WorldName
	if other {
		world = overworld
		if bytes.Equal(j.WorldName, overworld) {
			world = nether
		}
	}
	dst = appendString(dst, string(world))
	dst = binary.BigEndian.AppendUint64(dst, uint64(j.HashedSeed))
	dst = append(dst, j.GameMode, j.PreviousGameMode, boolByte(j.IsDebug), boolByte(j.IsFlat), 0) // keep no data
	if p.Layout >= Layout1193 {
		dst = append(dst, j.Death...)
		if len(j.Death) == 0 {
			dst = append(dst, 0)
		}
	}
	if p.Layout >= Layout120 {
		dst = mc.AppendVarInt(dst, j.PortalCooldown)
	}
	return dst
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// emptyComponent is the JSON text component an empty header or footer
// resets to.
const emptyComponent = `{"text":""}`

// AppendTitleReset appends the packet that clears the client's title and
// subtitle and resets their times, and reports false (appending nothing)
// for a version without titles (1.7).
func AppendTitleReset(dst []byte, p Packets) ([]byte, bool) {
	switch p.Title {
	case TitleAction4:
		return append(mc.AppendVarInt(dst, p.TitleCB), 4), true
	case TitleAction5:
		return append(mc.AppendVarInt(dst, p.TitleCB), 5), true
	case TitleClear:
		return append(mc.AppendVarInt(dst, p.TitleCB), 1), true
	}
	return dst, false
}

// AppendHeaderFooterReset appends the packet that empties the tab list's
// header and footer, and reports false for a version without them (1.7).
func AppendHeaderFooterReset(dst []byte, p Packets) ([]byte, bool) {
	if p.HeaderFooter < 0 {
		return dst, false
	}
	dst = appendString(mc.AppendVarInt(dst, p.HeaderFooter), emptyComponent)
	return appendString(dst, emptyComponent), true
}

// TextComponent returns a chat component holding text, in color when
// color is not empty, as on the wire: a JSON string with its length.
func TextComponent(text, color string) []byte {
	js, _ := json.Marshal(struct {
		Text  string `json:"text"`
		Color string `json:"color,omitempty"`
	}{text, color}) // strings always marshal
	return appendString(nil, string(js))
}

// AppendChat appends the packet that shows component (as on the wire, see
// TextComponent) in the client's chat as a system message.
func AppendChat(dst []byte, p Packets, component []byte) []byte {
	dst = append(mc.AppendVarInt(dst, p.ChatCB), component...)
	switch p.Chat {
	case ChatPosition:
		dst = append(dst, 1) // system
	case ChatPositionUUID:
		dst = append(dst, 1)
		dst = append(dst, make([]byte, 16)...) // no sender
	case ChatSystemBool:
		dst = append(dst, 0) // not above the hotbar
	}
	return dst
}

// AppendDisconnect appends the play Disconnect packet with component (as
// on the wire, see TextComponent) as its reason.
func AppendDisconnect(dst []byte, p Packets, component []byte) []byte {
	return append(mc.AppendVarInt(dst, p.Disconnect), component...)
}

// PacketID returns the packet ID at the start of a packet and the data
// after it.
func PacketID(packet []byte) (int32, []byte, error) {
	id, n, err := readVarInt(packet)
	if err != nil {
		return 0, nil, err
	}
	return id, packet[n:], nil
}
