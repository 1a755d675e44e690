// Package mcbackend is a fake Minecraft Java Edition backend on the reactor,
// for tests and benchmarks: it answers server list pings, logs clients of
// any protocol version in offline mode and then echoes their play frames.
//
// Every connection is a state machine run by reactor callbacks on its loop:
// no goroutine per connection. The machine (see machine.go) works on
// buffered bytes only, so it is tested and fuzzed without sockets.
//
// # Status
//
// After a Handshake with next state 1, Status Request 0x00 is answered with
//
//	{"version":{"name":"tidegate-backend","protocol":<the client's version>},
//	 "players":{"max":100,"online":<connections in play>},
//	 "description":{"text":"tidegate fake backend"}}
//
// (a client that names no version, with -1, is told 764; Config.StatusProtocol
// and StatusDescription replace the protocol and the text; each answer is
// counted in Stats.StatusRequests), and Ping 0x01 with Pong 0x01 carrying
// the same long; the backend then closes the connection, as vanilla servers
// do.
//
// # Login
//
// After a Handshake with next state 2 (or 3, transfer, from protocol 766),
// the backend reads the username from Login Start and answers:
//
//  1. Set Compression 0x03 (VarInt threshold), when Config.Compression is on
//     and the protocol is 47 (1.8) or later. Every later frame, both ways,
//     is VarInt length | VarInt data length | payload, where data length 0
//     means the payload is the plain packet and otherwise the payload is
//     zlib and data length its inflated size. The backend deflates its own
//     packets of at least CompressionThreshold bytes (packet ID and data);
//     it inflates client packets before play (bounded by
//     MaxLoginFrameLength, itself below the vanilla 8 MiB) and rejects
//     compressed packets declared smaller than the threshold.
//  2. Login Success 0x02 with the offline-mode UUID of the name (or the
//     forwarded one, see below), in the shape of mc.LoginLayoutOf:
//     - protocol < 5 (1.7.2): String UUID in 32 plain hex digits, String name;
//     - 5..734 (1.7.6 to 1.15.2, so 1.7.10): String dashed UUID, String name;
//     - 735..758 (1.16 to 1.18.2): 16-byte UUID, String name;
//     - 759..765 (1.19 to 1.20.4): 16-byte UUID, String name, VarInt 0 properties;
//     - 766..767 (1.20.5 to 1.21.1): as above, then Boolean strict error handling false;
//     - 768 and later (1.21.2+): 16-byte UUID, String name, VarInt 0 properties.
//
// With Config.Forwarding the backend expects a proxy in front of it, as a
// Paper or Spigot server behind one does: ForwardBungeeCord takes the UUID
// from a handshake address in BungeeCord form (host NUL ip NUL uuid) and
// refuses a login without it; ForwardVelocity answers Login Start with a
// Login Plugin Request on velocity:player_info (message ID 1, data: the
// highest forwarding version, 4) and takes the UUID and name from the
// answer, whose HMAC-SHA256 must verify under Config.ForwardingSecret
// (counted in Stats.Forwarded). A refusal sends the disconnect Spigot or
// Paper sends and closes the connection, counted as bad_forwarding.
//
// Before protocol 764 the connection is then in play. From 764 (1.20.2) on
// the backend waits for Login Acknowledged 0x03, sends Finish Configuration
// (0x02 up to protocol 765, 0x03 from 766), ignores the client's other
// configuration packets until the matching acknowledgement, and enters play.
// It sends no registry data: go-mc v1.20.2's bot does not need any, a
// vanilla client would.
//
// For protocol 764 and 765 only, play starts with a minimal Login (play)
// packet, 0x29 (see AppendJoinGame), unless Config.SkipJoinGame is set:
// go-mc v1.20.2's bot returns from JoinServer after configuration, but its
// bot/basic package and GameStart event fire on that packet. For other
// versions the backend sends nothing of its own in play, so a 1.7.10 client
// sees only its echo.
//
// # Play
//
// Every play frame is echoed unchanged (length, packet ID and data; with
// compression on, compressed frames are checked, not inflated), all the
// frames of one read in one write. The connection is its own sink, so it is
// not read while its echo output is past the reactor's high watermark: a
// client that does not read cannot grow the backend's memory.
// With Config.ChunkReplies a chunk request, a play frame whose body is
// packet ID 0x7F, "tgck", a big-endian uint32 reply size and anything else,
// is answered by one frame of that size instead: the request's body, then
// filler (AppendChunkFiller). Frames around it are echoed as before, in
// order; a size below the request's own or over MaxChunkReply closes the
// connection (bad_chunk_request). Compressed connections are echoed only.
// Each reply is written before the next request is answered, and the
// rest of the read waits while the output is past the watermark, so a
// client that asks and does not read holds at most the watermark and one
// reply (MaxChunkReply) in the backend.
//
// The backend is a reactor.HalfCloseHandler: a client that sends its last
// frames and shuts down its write side still gets their echoes (up to the
// watermark plus what it sent, for chunk replies), and the connection
// closes once they are delivered. So the reactor, not gnet, queues the
// backend's output, in pooled 16 KiB chunks the process's buffer budget
// (reactor.Config.BufferBudget, --buffer-budget) counts whole: the
// budget bounds the memory holding the output, not only its bytes, as it
// does for serve (docs/tlv.md, Memory bound).
// Config.SlowSink changes how play input is read: SlowSinkSlow consumes at
// most SlowRate bytes per second (pausing the connection with a loop timer),
// SlowSinkStall stops reading for good once play begins.
//
// # Bad input and timeouts
//
// A malformed or out-of-place packet closes the connection (without losing
// output already queued), is logged at warn level with the remote address,
// reason, phase and protocol, and is counted by reason in Stats. A
// connection that has not reached play within LoginTimeout is closed and
// counted in Stats.Timeouts.
package mcbackend
