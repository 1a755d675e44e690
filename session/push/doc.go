// Package push is tidegate's fan-out push server, after the Mantis push
// server: publishers send events for a topic, and every subscriber of the
// topic receives them, batched per subscriber over a window.
//
// # Listeners
//
// Publishers connect to the publish listener and send TLV frames (package
// protocol/tlv, DefaultFormat) of type TypePublish whose body is a publish
// body (package protocol/push). A frame that breaks the format is answered
// with a TLV error frame naming the reason, the connection is closed without
// losing that reply, and the reason is counted. Publishers receive nothing
// else: publishing is fire and forget.
//
// Subscribers connect to the subscribe listener, shared by both kinds: the
// first bytes decide. A connection whose first bytes are "SUBSCRIBE " is a
// TCP subscriber (Mantis legacy framing, see protocol/push); anything else is
// parsed as an HTTP/1.1 request, and "GET /events?topic=T" becomes a
// Server-Sent Events stream. Bad requests get a TCP "ERROR <reason>\n" line
// or an HTTP error status (400, 404, 405, 431, 505) and are closed. A TCP
// subscription is acknowledged with a frame holding one OpSubscribed event;
// an SSE subscription with the 200 response header.
//
// # Threads and hand-off
//
// The two listeners are two reactor servers with their own event loops, so
// publishers and subscribers always live on different loops. Topics are kept
// in a registry (a map under a read-write lock, read once per publish frame;
// topics are created by the first subscription and never removed, at most
// Config.MaxTopics). A topic holds, behind an atomic pointer, the list of
// subscriber loops that have subscribers to it; each entry (a localTopic)
// holds that loop's subscribers and is only ever touched on its loop.
//
// A publisher's read decodes every whole frame buffered. Each publish is
// stored once: its events are copied out of the read buffer into one new
// array, each event already in its legacy encoding (header, then payload), and
// that immutable array is shared by every subscriber on every loop. The
// publish is then queued per target loop, and when the read is done each
// target loop receives everything meant for it with one Loop.Execute. On the
// subscriber loop, the events are appended (by reference: one pointer per
// publish per subscriber) to each subscriber's pending list; nothing on the
// data path takes a per-subscriber lock or allocates per event per subscriber.
// A publisher with more than Config.MaxInflight hand-offs not yet run stops
// being read until half of them have.
//
// # Batches
//
// Each subscriber writes its pending events once per Config.Window (0
// writes each hand-off at once), or earlier when they reach MaxBatchEvents or
// MaxBatchBytes, as one reactor.Batch: small pieces are copied into the
// loop's scratch buffer and events of at least reactor.DefaultCrossover bytes
// are referenced, so the kernel gathers them straight from the shared array.
// A TCP batch is one legacy frame; an SSE batch is the events' data lines.
//
// Before a batch is built the subscriber's queued output is checked: past
// Config.HighWatermark the pending events are dropped and counted, as Mantis
// drops at the channel's writability check. The next batch written to that
// subscriber starts with a drop report: for SSE the meta message
// data: {"tidegate.meta":"droppedMessageCount","value":"n"}, for TCP an
// OpNonDataError event with the same JSON payload. A subscriber that stays
// past the watermark for Config.NotWritableTimeout is aborted.
//
// # Timers
//
// Each subscriber has one reactor.Timer armed at its earliest deadline: the
// end of its window, its heartbeat (Config.Heartbeat after the last write:
// an OpHeartbeat frame or an SSE ping event), its read idle limit
// (Config.ReadIdle after the last byte read, for TCP subscribers and for
// connections that have not finished their request; SSE clients send nothing
// and are exempt) and its not-writable limit. Deadlines that move later do
// not move the timer; it re-arms itself when it fires early.
package push
