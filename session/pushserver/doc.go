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
// at most Config.MaxTopics at once). A topic holds, behind an atomic
// pointer, the list of subscriber loops that have subscribers to it; each
// entry (a localTopic) holds that loop's subscribers and is only ever
// touched on its loop. The first subscription creates a topic; when the last
// subscriber of a loop leaves, the loop withdraws its entry, and the loop
// that withdraws the last entry removes the topic from the registry (under
// the registry's lock, then the topic's). A subscription that looked the
// topic up just before that finds it marked removed when it tries to add its
// loop, and looks it up again, which creates it anew. Publishing to a topic
// nobody subscribes to creates nothing; hand-offs already under way hold
// their topic by pointer and find it empty.
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
// MaxBatchBytes, as one writev.Batch; the window starts with the first event
// of a batch. With Config.WindowPhases the subscribers of a loop get different
// phases and a batch is due at the subscriber's next phase point (windowEnd),
// so that a fan-out, which reaches every subscriber of a topic at the same
// moment, is written at that many moments of the window instead of in one
// burst at its end, and no event waits longer than the window (less tail
// latency; more wake-ups and fewer events per batch). In a batch, small
// pieces are copied into the loop's scratch buffer and events of at least
// writev.DefaultCrossover bytes are referenced, so the kernel gathers them
// straight from the shared array.
// A TCP batch is one legacy frame; an SSE batch is the events' data lines.
//
// # Memory bounds
//
// Before a batch is built its size is known (each event's legacy and SSE
// lengths are computed once, at publish), and it is built only as far as it
// fits in the subscriber's room: Config.HighWatermark minus the output
// still queued for it, and no more than the buffer budget has left (see
// below). The oldest pending events go first; the others are dropped and
// counted, as Mantis drops a batch at the channel's writability check, and
// never encoded. The next batch written to that subscriber starts with a
// drop report, so the report stands exactly where the gap is: for SSE the
// meta message data: {"tidegate.meta":"droppedMessageCount","value":"n"}, for
// TCP an OpNonDataError event with the same JSON payload. A batch written
// while nothing is queued is not cut by the watermark: the kernel takes it
// first, and what it leaves is at most one batch. So the output queued for a
// subscriber that never reads stays under the watermark, or one batch when
// that is larger.
//
// Subscribers' output is queued by the reactor, not by gnet (the subscribe
// handler is a reactor.HalfCloseHandler): what the kernel does not take is
// copied into the reactor's fixed-size chunks, each returned once sent, so
// what is held for a subscriber is what is queued plus less than one chunk.
//
// Config.BufferBudget bounds the output queued for all subscribers of the
// server together. Each subscriber records what was queued for it when it
// last looked, in one shared atomic total; the reactor does not tell when
// output drains, so a subscriber with output queued looks again on its
// timer, a tick later and then at doubling intervals up to a second. A subscriber
// with output queued may come to hold at most a sixteenth of what the
// budget has left; one with nothing queued only needs its batch to fit in
// what is left (the kernel takes it first). Far from the budget this never
// binds; as the total approaches it the subscribers holding the most are
// cut off first and the smallest last, N subscribers that never read settle
// at a sixteenth of what is left each, which leaves 16/(16+N) of the budget
// for the others, and the total stays under the budget (each loop checks on
// its own, so together they may pass it by about a batch each). Budget drops
// are counted on their own and reported to the subscriber like the others.
//
// What a subscriber's batch leaves queued as its peer stops reading is only
// known once written, and looks like any reader's batch until then, so it is
// admitted while the budget has room. When such remainders alone fill the
// budget (many stuck subscribers with large batches: 1,000 of them with
// 200 KB batches under 256 MiB), every batch is cut, readers' too, until
// NotWritableTimeout closes the stuck ones. Refusing the part of a write the
// kernel did not take would need the reactor to hand it back instead of
// queuing it. Measurements of both cases:
// benchmarks/results/2026-12-01-push-bounds.md.
//
// A subscriber is not writable from the moment one of its batches is cut
// while output is queued for it, or a heartbeat is due while output is
// still queued, until a batch is written whole or nothing is queued any
// more. One that stays not writable for Config.NotWritableTimeout is aborted
// and counted.
//
// # Paused subscribers
//
// A subscriber that stopped reading, with nothing published, costs next to
// nothing: the reactor writes its queue when the drain watcher reports room
// (its socket is full, so that is never), and so leaves it out of the
// buffer budget's scan, which runs every tick for output gnet queues (that
// scan made 1,000 stuck subscribers wake each loop 100 times a second). Its
// own looks at the queue, once at a second apart, fall on whole seconds of
// the loop's clock, all of a loop's stuck subscribers in one wake-up, and
// no heartbeat is due while it is not writable. What is left per second is
// one wake-up of each loop. Measurements:
// benchmarks/results/2026-12-02-paused-cost.md.
//
// # Timers
//
// Each subscriber has one looptimer.Timer armed at its earliest deadline: the
// end of its window, its heartbeat (Config.Heartbeat after the last write:
// an OpHeartbeat frame or an SSE ping event), its read idle limit
// (Config.ReadIdle after the last byte read, for TCP subscribers and for
// connections that have not finished their request; SSE clients send nothing
// and are exempt), its not-writable limit and the next look at its queued
// output (none for the heartbeat while it is not writable: see above).
// Deadlines that move later do not move the timer; it re-arms itself
// when it fires early.
package pushserver
