package pushserver

import (
	"math/bits"
	"runtime"
	"sync/atomic"

	"github.com/tidegate/tidegate/protocol/push"
)

// BatchBuckets is the number of buckets of Stats.BatchSizes.
const BatchBuckets = 12

// rejectReason indexes counters of rejected publisher frames: the publish
// body reasons of protocol/push, then these.
const (
	rejectTooLarge    = push.NumPublishReasons + iota // TLV body longer than allowed
	rejectErrorType                                   // a client sent the reserved error type
	rejectUnknownType                                 // a TLV type other than TypePublish
	numRejects
)

// subscribeRejectReason indexes counters of refused subscribe requests.
const (
	refuseBadSubscribe = iota // malformed TCP subscribe line
	refuseHTTP400
	refuseHTTP404
	refuseHTTP405
	refuseHTTP431
	refuseHTTP505
	refuseTopicsFull
	numRefusals
)

var refusalNames = [numRefusals]string{"bad_subscribe_line", "http_400", "http_404", "http_405", "http_431", "http_505", "topics_full"}

// counters are one loop's counters, written on the loop, read by Stats.
type counters struct {
	publishers, tcpSubs, sseSubs, pending atomic.Int64

	publishFrames, publishedEvents, unroutedEvents atomic.Int64
	handoffs, handoffErrors, publisherPauses       atomic.Int64
	rejects                                        [numRejects]atomic.Int64

	refusals                                [numRefusals]atomic.Int64
	heartbeats, readIdleCloses, stuckCloses atomic.Int64

	writes writeCounters
}

// writeCounters count the outcomes of subscriber flushes. A flush adds its
// counts in one write section (count) and Stats reads them as one snapshot
// (load), so that a reader (Stats, /metrics) never sees an event processed
// without its outcome, or the other way round: processed is always
// successful + failed + dropped, and budgetDropped at most dropped.
//
// It is a sequence lock with a single writer, the loop: seq is odd while
// a flush's counts are being added, and a reader that saw it odd, or saw
// it change while it read, reads again. The section is a dozen atomic
// adds and no call, so a reader rarely retries and never waits long.
type writeCounters struct {
	seq                                    atomic.Uint64
	processed, successful, failed, dropped atomic.Int64
	budgetDropped                          atomic.Int64
	batches, batchEvents                   atomic.Int64
	batchSizes                             [BatchBuckets]atomic.Int64
}

// writeTotals is a consistent snapshot of writeCounters.
type writeTotals struct {
	processed, successful, failed, dropped, budgetDropped int64
	batches, batchEvents                                  int64
	batchSizes                                            [BatchBuckets]int64
}

// count adds one flush of processed events: dropped of them were dropped
// (budgetDropped of those by the buffer budget), and the others, if any,
// went as one batch, whose write failed if failed.
func (w *writeCounters) count(processed, dropped, budgetDropped int, failed bool) {
	w.seq.Add(1)
	w.processed.Add(int64(processed))
	if dropped > 0 {
		w.dropped.Add(int64(dropped))
		w.budgetDropped.Add(int64(budgetDropped))
	}
	if written := processed - dropped; written > 0 {
		if failed {
			w.failed.Add(int64(written))
		} else {
			w.successful.Add(int64(written))
			w.batches.Add(1)
			w.batchEvents.Add(int64(written))
			w.batchSizes[batchBucket(written)].Add(1)
		}
	}
	w.seq.Add(1)
}

// load returns the counts of the flushes finished so far.
func (w *writeCounters) load() writeTotals {
	for {
		seq := w.seq.Load()
		if seq&1 != 0 {
			runtime.Gosched() // a flush is counting: let the loop finish
			continue
		}
		t := writeTotals{
			processed:     w.processed.Load(),
			successful:    w.successful.Load(),
			failed:        w.failed.Load(),
			dropped:       w.dropped.Load(),
			budgetDropped: w.budgetDropped.Load(),
			batches:       w.batches.Load(),
			batchEvents:   w.batchEvents.Load(),
		}
		for i := range w.batchSizes {
			t.batchSizes[i] = w.batchSizes[i].Load()
		}
		if w.seq.Load() == seq {
			return t
		}
	}
}

// Stats is a snapshot of the push server's counters. Write counters count
// events, as Mantis' numProcessedWrites / numSuccessfulWrites /
// numFailedWrites do: every event a subscriber was due is processed, then
// either dropped (no room under the high watermark or the buffer budget),
// written, or failed. The write counters are read as one snapshot:
// ProcessedWrites is always SuccessfulWrites + FailedWrites + Dropped.
type Stats struct {
	Publishers     int64 // publisher connections open now
	TCPSubscribers int64 // TCP subscribers open now
	SSESubscribers int64 // SSE subscribers open now
	Pending        int64 // connections that have not finished their subscribe request

	PublishFrames   int64 // publish frames accepted
	PublishedEvents int64 // events in them
	UnroutedEvents  int64 // events published to a topic nobody subscribes to
	Handoffs        int64 // hand-offs run on subscriber loops (one per loop per publisher read)
	HandoffErrors   int64 // hand-offs a subscriber loop did not accept (server stopping)
	PublisherPauses int64 // times a publisher stopped being read for MaxInflight
	// Rejects counts publisher frames refused, by reason.
	Rejects map[string]int64
	// Refusals counts subscribe requests refused, by reason.
	Refusals map[string]int64

	Topics      int64 // topics in the registry now (topics with subscribers)
	QueuedBytes int64 // output queued for subscribers now, as the buffer budget counts it

	ProcessedWrites  int64 // events that reached a subscriber's flush
	SuccessfulWrites int64 // events written
	FailedWrites     int64 // events whose write failed
	Dropped          int64 // events dropped: at the high watermark or the buffer budget
	BudgetDropped    int64 // the part of Dropped the buffer budget cut

	Batches     int64 // batches written
	BatchEvents int64 // events in them (BatchEvents/Batches is the mean batch size)
	// BatchSizes is a histogram of events per batch: bucket i counts batches
	// of 2^(i-1) to 2^i-1 events (bucket 0 is unused), the last bucket
	// everything larger.
	BatchSizes [BatchBuckets]int64

	Heartbeats     int64 // heartbeats written
	ReadIdleCloses int64 // subscribers closed for read idleness
	StuckCloses    int64 // subscribers aborted for staying not writable for NotWritableTimeout
}

func batchBucket(n int) int { return min(bits.Len(uint(n)), BatchBuckets-1) }

func (s *Stats) add(c *counters) {
	s.Publishers += c.publishers.Load()
	s.TCPSubscribers += c.tcpSubs.Load()
	s.SSESubscribers += c.sseSubs.Load()
	s.Pending += c.pending.Load()
	s.PublishFrames += c.publishFrames.Load()
	s.PublishedEvents += c.publishedEvents.Load()
	s.UnroutedEvents += c.unroutedEvents.Load()
	s.Handoffs += c.handoffs.Load()
	s.HandoffErrors += c.handoffErrors.Load()
	s.PublisherPauses += c.publisherPauses.Load()
	for i := range c.rejects {
		if v := c.rejects[i].Load(); v != 0 {
			s.Rejects[rejectName(i)] += v
		}
	}
	for i := range c.refusals {
		if v := c.refusals[i].Load(); v != 0 {
			s.Refusals[refusalNames[i]] += v
		}
	}
	w := c.writes.load()
	s.ProcessedWrites += w.processed
	s.SuccessfulWrites += w.successful
	s.FailedWrites += w.failed
	s.Dropped += w.dropped
	s.BudgetDropped += w.budgetDropped
	s.Batches += w.batches
	s.BatchEvents += w.batchEvents
	for i := range w.batchSizes {
		s.BatchSizes[i] += w.batchSizes[i]
	}
	s.Heartbeats += c.heartbeats.Load()
	s.ReadIdleCloses += c.readIdleCloses.Load()
	s.StuckCloses += c.stuckCloses.Load()
}

func rejectName(i int) string {
	switch i {
	case rejectTooLarge:
		return "body_too_large"
	case rejectErrorType:
		return "error_type_from_client"
	case rejectUnknownType:
		return "unknown_type"
	}
	return push.PublishReason(i).String()
}
