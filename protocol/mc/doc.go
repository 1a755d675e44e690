// Package mc holds allocation-free codecs for the parts of the Minecraft
// Java Edition protocol a transparent proxy reads or writes: VarInts, frame
// splitting, the handshake, status, login start, set compression and the
// compressed frame header, plus Forge marker detection, BungeeCord legacy
// IP forwarding and offline-mode UUIDs; the pre-1.7 server list ping and
// its kick-packet answer (legacy.go); the fields of a status JSON a proxy
// reads or rewrites (statusjson.go); and chat components rendered as legacy
// § text (chat.go). Those three allocate (strings decoded from UTF-16 or
// JSON). For a proxy that terminates the login: the login packets of every
// version from one table (loginversions.go, loginpackets.go), the
// compressed framing with bounded inflation (compress.go) and Velocity's
// modern forwarding, signed with HMAC-SHA256 (velocity.go).
//
// Parsers take a frame body (packet ID and data, as located by SplitFrame)
// and return sub-slices of it instead of copies; Append functions follow the
// strconv convention of appending to a caller-supplied slice. Errors are
// *ProtocolError values whose Reason is a stable label for metrics.
//
// Nothing here knows about connection state. For the online-mode login,
// encryption.go has the Encryption Request and Response of every version
// and the server hash, and cfb8.go the AES/CFB8 stream cipher that turns
// on after them; without the shared secret (a transparent relay) the
// stream after an Encryption Request is opaque and cannot be parsed.
package mc
