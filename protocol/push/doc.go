// Package push holds the wire formats of tidegate's push server: the
// publish body that publishers send inside TLV frames, the Mantis legacy TCP
// framing and the Server-Sent Events encoding that subscribers receive, the
// one-line TCP subscribe request and a bounded HTTP/1.1 request parser for
// SSE subscribers. It is pure: no I/O, and it imports nothing of tidegate.
//
// # Publish body (inside a TLV frame of type TypePublish)
//
//	+-----------+----------------+-------------------------------------+
//	| topicLen  | topic          | events ...                          |
//	| u8        | topicLen bytes | each: u32 big-endian len | payload  |
//	+-----------+----------------+-------------------------------------+
//
// The topic is 1 to MaxTopicLen bytes of printable ASCII without space
// (0x21-0x7E). A body carries 1 to Limits.MaxEvents events of at most
// Limits.MaxEventSize bytes each; zero-length payloads are allowed. Bytes
// after the last event are an error.
//
// # Legacy TCP framing (subscriber side, as Mantis' LegacyTcpPipelineConfigurator)
//
//	frame = u32 big-endian length | 0x01 | nameLen (u8, < 127) | name | events
//	event = u32 big-endian len (= 1 + len(payload)) | op (u8) | payload
//
// The length prefix counts the bytes after it. Ops: OpNext (1) carries an
// event, OpSubscribed (4) acknowledges a subscription (empty payload),
// OpHeartbeat (6) is sent after write idleness (empty payload) and
// OpNonDataError (7) carries a drop report (see AppendDropMeta).
//
// # Subscribe request (TCP)
//
// A TCP subscriber's first bytes are one line: "SUBSCRIBE <topic>\n" (a
// "\r\n" ending is accepted too), at most MaxSubscribeLine bytes.
//
// # Server-Sent Events
//
// An HTTP subscriber sends "GET /events?topic=<topic> HTTP/1.1" and receives
// SSEResponseHeader followed by one "data: <line>\n" per line of each payload
// and a blank line after each event; lines are split at "\n", "\r\n" and
// "\r" so that a payload cannot break the stream. Idle streams get SSEPing.
package push
