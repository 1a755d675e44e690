package mcbackend

import (
	"encoding/json"
	"strconv"

	"github.com/tidegate/tidegate/protocol/mc"
)

// Protocol versions at which a packet this backend writes changes shape.
const (
	protocol1_8        = 47  // first version with Set Compression
	protocol1_20_3     = 765 // last version whose Login (play) this backend writes
	packetJoinGame1202 = 0x29
)

// Packet IDs of the login and configuration states from 1.20.2 on.
const (
	packetLoginAcknowledged = 0x03 // serverbound, login state
)

// finishConfigurationID returns the ID of Finish Configuration in the
// configuration state of protocol v, the same in both directions: 0x02 in
// 1.20.2–1.20.4, 0x03 from 1.20.5 (protocol 766) on.
func finishConfigurationID(v int32) int32 {
	if v >= mc.Protocol1_20_5 {
		return 0x03
	}
	return 0x02
}

// statusJSON is the Status Response this backend sends, split around the two
// numbers it fills in; the description is Config.StatusDescription.
const (
	statusJSONVersion = `{"version":{"name":"tidegate-backend","protocol":`
	statusJSONPlayers = `},"players":{"max":100,"online":`
	// DefaultStatusDescription is the status description when
	// Config.StatusDescription is empty.
	DefaultStatusDescription = "tidegate fake backend"
)

// unknownVersionStatusProtocol is the protocol number announced to a status
// ping that names no version (-1, as pingers do, and the proxy's health
// checks and status refreshes): 1.20.2, the version go-mc's bot speaks.
const unknownVersionStatusProtocol = mc.Protocol1_20_2

// statusJSONEnd returns the end of the status JSON, with description as
// the description's text.
func statusJSONEnd(description string) []byte {
	quoted, _ := json.Marshal(description) // a string always marshals
	return append(append([]byte(`},"description":{"text":`), quoted...), "}}"...)
}

// appendStatusJSON appends the status JSON for a client of protocol v with
// online players in play to dst; end is from statusJSONEnd.
func appendStatusJSON(dst []byte, v int32, online int64, end []byte) []byte {
	dst = append(dst, statusJSONVersion...)
	dst = strconv.AppendInt(dst, int64(v), 10)
	dst = append(dst, statusJSONPlayers...)
	dst = strconv.AppendInt(dst, online, 10)
	return append(dst, end...)
}

// appendLoginSuccess appends the body (packet ID 0x02 and data) of Login
// Success for protocol v to dst:
//
//   - v < 5 (1.7.2): String UUID as 32 plain hex digits, String username.
//   - 5 <= v < 735 (1.7.6–1.15.2): String dashed UUID, String username.
//   - 735 <= v < 759 (1.16–1.18.2): UUID as 16 bytes, String username.
//   - 759 <= v < 766 (1.19–1.20.4): UUID, String username, VarInt 0 properties.
//   - 766 <= v < 768 (1.20.5–1.21.1): as above, then Boolean strict error
//     handling, false.
//   - v >= 768 (1.21.2+): UUID, String username, VarInt 0 properties.
//
// The UUID is the offline-mode UUID of the username.
func appendLoginSuccess(dst []byte, v int32, username []byte) []byte {
	return mc.AppendLoginSuccess(dst, v, mc.LoginSuccess{UUID: mc.OfflineUUID(username), Name: username})
}

// appendSetCompression appends the body of Set Compression (login state,
// 0x03) announcing threshold to dst.
func appendSetCompression(dst []byte, threshold int32) []byte {
	dst = mc.AppendVarInt(dst, mc.PacketSetCompression)
	return mc.AppendVarInt(dst, threshold)
}

// hasJoinGame reports whether the backend knows the Login (play) packet of
// protocol v, which it sends when play begins: 1.20.2 and 1.20.3/1.20.4.
func hasJoinGame(v int32) bool {
	return v >= mc.Protocol1_20_2 && v <= protocol1_20_3
}

// AppendJoinGame appends the body of a minimal Login (play) packet for
// protocol 764/765 (ID 0x29) to dst: entity ID 1, not hardcore, one
// dimension minecraft:overworld, max players 100, view and simulation
// distance 2, no reduced debug info, respawn screen on, no limited crafting,
// dimension type and name minecraft:overworld, hashed seed 0, survival
// (previous game mode -1), not debug, not flat, no death location, portal
// cooldown 0. go-mc v1.20.2's bot/basic reads it through "is flat".
func AppendJoinGame(dst []byte) []byte {
	const overworld = "minecraft:overworld"
	dst = mc.AppendVarInt(dst, packetJoinGame1202)
	dst = append(dst, 0, 0, 0, 1) // Int entity ID
	dst = append(dst, 0)          // Boolean hardcore
	dst = mc.AppendVarInt(dst, 1) // dimension names
	dst = mc.AppendString(dst, []byte(overworld))
	dst = mc.AppendVarInt(dst, 100)               // max players
	dst = mc.AppendVarInt(dst, 2)                 // view distance
	dst = mc.AppendVarInt(dst, 2)                 // simulation distance
	dst = append(dst, 0, 1, 0)                    // reduced debug info, respawn screen, limited crafting
	dst = mc.AppendString(dst, []byte(overworld)) // dimension type
	dst = mc.AppendString(dst, []byte(overworld)) // dimension name
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)     // Long hashed seed
	dst = append(dst, 0, 0xFF)                    // game mode survival, previous game mode -1
	dst = append(dst, 0, 0, 0)                    // debug, flat, has death location
	return mc.AppendVarInt(dst, 0)                // portal cooldown
}
