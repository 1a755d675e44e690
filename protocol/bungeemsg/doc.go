// Package bungeemsg decodes and encodes the messages of the BungeeCord
// plugin channel: the payloads of plugin messages (custom_payload) on the
// channel "BungeeCord" (before 1.13) or "bungeecord:main" (from 1.13), by
// which a backend server's plugins ask the proxy in front of it to move a
// player, count or list players, name the servers, and so on.
//
// A payload is Java DataOutput: a subchannel name written with writeUTF (a
// 2-byte big-endian length, then that many bytes of modified UTF-8), then
// the subchannel's fields: more writeUTF strings, big-endian ints and
// shorts, and for Forward a short-prefixed byte array. ParseRequest reads
// what a backend sends; AppendResponse writes the proxy's answers;
// AppendRequest and ParseResponse are their inverses, for tests and fake
// backends.
//
// Every length is bounded: a string by its 2-byte prefix (at most 65,535
// bytes, which AppendUTF checks on the way out), a Forward payload by its
// signed short (at most 32,767) and a whole payload by MaxPayload. Parsing
// does no I/O, keeps no state, and allocates only the strings it returns;
// Data aliases the input.
//
// Errors are *Error values whose Reason is a stable label for metrics; the
// message says what failed with what value.
package bungeemsg
