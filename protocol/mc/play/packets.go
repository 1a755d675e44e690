// Package play holds what a proxy needs of the play state of Minecraft
// Java 1.7.10 to 1.20.1 to move a player between servers the way those
// versions allow: with the new server's Join Game and Respawn packets
// (there is no configuration state to go back to before 1.20.2). It has
// the packet IDs and formats of Join Game and Respawn per protocol
// version, a Join Game decoder, and encoders for the packets the proxy
// sends the client around a switch (Respawn, title and tab-list-footer
// resets, chat, Disconnect).
//
// It builds on protocol/mc's VarInts and strings and imports nothing else
// of this module; wire.go reads fields with an error that names them.
package play

import "fmt"

// Layout is a Join Game / Respawn format, from the oldest.
type Layout uint8

// Join Game and Respawn formats.
const (
	// Layout17: 1.7.6-1.7.10. Join Game: entity ID (int), game mode
	// (ubyte), dimension (byte), difficulty, max players (ubytes), level
	// type (string). Respawn: dimension (int), difficulty, game mode, level
	// type.
	Layout17 Layout = iota
	// Layout18: 1.8.x: Join Game adds reduced debug info (bool).
	Layout18
	// Layout1912: 1.9.1-1.13.2: Join Game's dimension is an int.
	Layout1912
	// Layout1162: 1.16.2-1.17.1: hardcore, game modes, world names, the
	// dimension codec (NBT), the dimension type (NBT), world name, hashed
	// seed... Respawn: dimension type (NBT), world name, hashed seed, game
	// mode, previous game mode, debug, flat, copy metadata.
	Layout1162
	// Layout118: 1.18-1.18.2: Join Game adds simulation distance.
	Layout118
	// Layout1193: 1.19.3-1.19.4: the dimension type is an identifier;
	// Join Game and Respawn end with an optional death location; Respawn's
	// last boolean became a "data kept" byte.
	Layout1193
	// Layout120: 1.20-1.20.1: both add a portal cooldown (VarInt) at the end.
	Layout120
)

// Title is how a version resets the client's title.
type Title uint8

// Title reset forms.
const (
	TitleNone    Title = iota // 1.7: no titles
	TitleAction4              // 1.8-1.10: Title packet, action 4 (reset)
	TitleAction5              // 1.11-1.16.5: Title packet, action 5 (reset)
	TitleClear                // 1.17+: Clear Titles packet, reset true
)

// Chat is the form of the chat packet the proxy writes to the client.
type Chat uint8

// Chat packet forms.
const (
	ChatJSON         Chat = iota // 1.7: the JSON component alone
	ChatPosition                 // 1.8-1.15.2: JSON, then position (byte, 1: system)
	ChatPositionUUID             // 1.16-1.18.2: JSON, position, sender UUID
	ChatSystemBool               // 1.19.1-1.20.1: System Chat: JSON, overlay (bool)
)

// Packets is one protocol version's play packets a respawn move uses.
// Names follow minecraft-data's (internal/testkit/nodemc checks the table
// against it).
type Packets struct {
	Protocol int32  // the protocol version
	Release  string // its releases, for messages
	Layout   Layout
	Title    Title
	Chat     Chat

	// Clientbound.
	JoinGame     int32 // login
	Respawn      int32 // respawn
	KeepAliveCB  int32 // keep_alive
	Disconnect   int32 // kick_disconnect
	ChatCB       int32 // chat, or system_chat from 1.19
	PluginCB     int32 // custom_payload
	TitleCB      int32 // title, or clear_titles from 1.17; -1 without
	HeaderFooter int32 // playerlist_header; -1 without (1.7)
	// Serverbound.
	KeepAliveSB int32 // keep_alive
	PluginSB    int32 // custom_payload
}

// packets is every version a respawn move supports, one row each: those
// it was tested against (internal/testkit/nodemc's clients and servers).
var packets = [...]Packets{
	{Protocol: 5, Release: "1.7.6-1.7.10", Layout: Layout17, Title: TitleNone, Chat: ChatJSON,
		JoinGame: 0x01, Respawn: 0x07, KeepAliveCB: 0x00, Disconnect: 0x40, ChatCB: 0x02, PluginCB: 0x3f, TitleCB: -1, HeaderFooter: -1,
		KeepAliveSB: 0x00, PluginSB: 0x17},
	{Protocol: 47, Release: "1.8-1.8.9", Layout: Layout18, Title: TitleAction4, Chat: ChatPosition,
		JoinGame: 0x01, Respawn: 0x07, KeepAliveCB: 0x00, Disconnect: 0x40, ChatCB: 0x02, PluginCB: 0x3f, TitleCB: 0x45, HeaderFooter: 0x47,
		KeepAliveSB: 0x00, PluginSB: 0x17},
	{Protocol: 340, Release: "1.12.2", Layout: Layout1912, Title: TitleAction5, Chat: ChatPosition,
		JoinGame: 0x23, Respawn: 0x35, KeepAliveCB: 0x1f, Disconnect: 0x1a, ChatCB: 0x0f, PluginCB: 0x18, TitleCB: 0x48, HeaderFooter: 0x4a,
		KeepAliveSB: 0x0b, PluginSB: 0x09},
	{Protocol: 754, Release: "1.16.4-1.16.5", Layout: Layout1162, Title: TitleAction5, Chat: ChatPositionUUID,
		JoinGame: 0x24, Respawn: 0x39, KeepAliveCB: 0x1f, Disconnect: 0x19, ChatCB: 0x0e, PluginCB: 0x17, TitleCB: 0x4f, HeaderFooter: 0x53,
		KeepAliveSB: 0x10, PluginSB: 0x0b},
	{Protocol: 758, Release: "1.18.2", Layout: Layout118, Title: TitleClear, Chat: ChatPositionUUID,
		JoinGame: 0x26, Respawn: 0x3d, KeepAliveCB: 0x21, Disconnect: 0x1a, ChatCB: 0x0f, PluginCB: 0x18, TitleCB: 0x10, HeaderFooter: 0x5f,
		KeepAliveSB: 0x0f, PluginSB: 0x0a},
	{Protocol: 762, Release: "1.19.4", Layout: Layout1193, Title: TitleClear, Chat: ChatSystemBool,
		JoinGame: 0x28, Respawn: 0x41, KeepAliveCB: 0x23, Disconnect: 0x1a, ChatCB: 0x64, PluginCB: 0x17, TitleCB: 0x0e, HeaderFooter: 0x65,
		KeepAliveSB: 0x12, PluginSB: 0x0d},
	{Protocol: 763, Release: "1.20-1.20.1", Layout: Layout120, Title: TitleClear, Chat: ChatSystemBool,
		JoinGame: 0x28, Respawn: 0x41, KeepAliveCB: 0x23, Disconnect: 0x1a, ChatCB: 0x64, PluginCB: 0x17, TitleCB: 0x0e, HeaderFooter: 0x65,
		KeepAliveSB: 0x12, PluginSB: 0x0d},
}

// PacketsOf returns the play packets of protocol version v, and false for
// a version the table does not have.
func PacketsOf(v int32) (Packets, bool) {
	for _, p := range packets {
		if p.Protocol == v {
			return p, true
		}
	}
	return Packets{}, false
}

// All returns every row of the table, oldest first (for checks against
// other sources).
func All() []Packets { return append([]Packets(nil), packets[:]...) }

// Supported names the versions the table has, for messages.
func Supported() string {
	s := ""
	for i, p := range packets {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s (%d)", p.Release, p.Protocol)
	}
	return s
}
