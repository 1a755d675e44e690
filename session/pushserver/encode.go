package pushserver

import (
	"math"

	"github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/reactor/writev"
)

// event is one published event, stored once and shared read-only by every
// subscriber: wire is its legacy encoding, header then payload.
type event struct {
	wire      []byte
	multiline bool  // the payload has line breaks: SSE needs several data lines
	sse       int32 // length of its SSE encoding
}

func (e *event) payload() []byte { return e.wire[push.EventHeaderLen:] }

// delivery is the events of one publish frame. It is immutable once built.
type delivery struct {
	events   []event
	bytes    int // sum of len(wire)
	sseBytes int // sum of their SSE lengths
}

// size is the length of d's events in a subscriber's framing.
func (d *delivery) size(sse bool) int {
	if sse {
		return d.sseBytes
	}
	return d.bytes
}

// newDelivery stores the events of p once: one array for all of them, each
// event in its legacy encoding.
func newDelivery(p *push.Publish) *delivery {
	arena := make([]byte, p.Count*push.EventHeaderLen+p.PayloadBytes)
	d := &delivery{events: make([]event, 0, p.Count), bytes: len(arena)}
	off := 0
	for it := p.Events(); ; {
		payload, ok := it.Next()
		if !ok {
			break
		}
		w := arena[off : off+push.EventHeaderLen+len(payload)]
		push.PutEventHeader(w, push.OpNext, len(payload))
		copy(w[push.EventHeaderLen:], payload)
		ml := push.HasLineBreak(payload)
		e := event{wire: w, multiline: ml, sse: int32(sseSize(payload, ml))}
		d.events = append(d.events, e)
		d.sseBytes += int(e.sse)
		off += len(w)
	}
	return d
}

// sseSize is the length of payload's SSE encoding (see appendSSEBatch).
func sseSize(payload []byte, multiline bool) int {
	if !multiline {
		return len(sseDataPrefix) + len(payload) + len(sseEventEnd)
	}
	n := len(sseLineEnd)
	for p := payload; ; {
		line, rest, found := push.CutLine(p)
		n += len(sseDataPrefix) + len(line) + len(sseLineEnd)
		if !found {
			return n
		}
		p = rest
	}
}

// size is the length of e in a subscriber's framing.
func (e *event) size(sse bool) int {
	if sse {
		return int(e.sse)
	}
	return len(e.wire)
}

// batchOverhead is what a batch carries besides its events: a legacy frame's
// header (topic is its name; nil for SSE) and the drop report when dropped > 0.
func batchOverhead(sse bool, topic []byte, dropped int64) int {
	n := 0
	if !sse {
		n = push.FrameHeaderLen(len(topic))
	}
	if dropped > 0 {
		var scratch [metaScratch]byte
		meta := len(push.AppendDropMeta(scratch[:0], dropped))
		if sse {
			n += len(sseDataPrefix) + meta + len(sseEventEnd)
		} else {
			n += push.EventHeaderLen + meta
		}
	}
	return n
}

// fitEvents returns the longest run of whole events from the start of
// pending whose encoded sizes add up to at most limit bytes, and that sum.
func fitEvents(pending []*delivery, sse bool, limit int) (events, bytes int) {
	for _, d := range pending {
		for i := range d.events {
			n := d.events[i].size(sse)
			if bytes+n > limit {
				return events, bytes
			}
			events++
			bytes += n
		}
	}
	return events, bytes
}

var (
	sseDataPrefix = []byte(push.SSEDataPrefix)
	sseLineEnd    = []byte(push.SSELineEnd)
	sseEventEnd   = []byte(push.SSEEventEnd)
)

// metaScratch is big enough for the drop meta message.
const metaScratch = 96

// legacyCrossover is the event size from which legacy TCP batches reference
// events instead of copying them. A legacy event is one whole slice (header
// and payload), the "bare" shape, whose crossover is lower than the
// delimited SSE shape's that sets writev.DefaultCrossover: at 2 KiB events,
// referencing was 16% cheaper in BenchmarkBatchWrite and 3.7% cheaper in
// reactor's BenchmarkBatchCrossover (benchmarks/results/2026-11-30-push.md).
const legacyCrossover = 2048

// appendLegacyBatch adds one legacy frame to b: topic as its name, an
// OpNonDataError drop report first when dropped > 0, then the first n events
// of pending (all of them when n is larger), whose encoded sizes total
// eventBytes. Events of at least legacyCrossover bytes are referenced, not
// copied, unless copyAll is set.
func appendLegacyBatch(b *writev.Batch, topic []byte, dropped int64, pending []*delivery, n, eventBytes int, copyAll bool) {
	prev := b.Crossover
	b.Crossover = legacyCrossover
	if copyAll {
		b.Crossover = math.MaxInt
	}
	defer func() { b.Crossover = prev }()
	var meta []byte
	var scratch [metaScratch]byte
	if dropped > 0 {
		meta = push.AppendDropMeta(scratch[:0], dropped)
		eventBytes += push.EventHeaderLen + len(meta)
	}
	h := b.Reserve(push.FrameHeaderLen(len(topic)))
	push.PutFrameHeader(h, topic, eventBytes)
	if meta != nil {
		m := b.Reserve(push.EventHeaderLen + len(meta))
		push.PutEventHeader(m, push.OpNonDataError, len(meta))
		copy(m[push.EventHeaderLen:], meta)
	}
	for _, d := range pending {
		for i := range d.events {
			if n == 0 {
				return
			}
			n--
			b.Add(d.events[i].wire)
		}
	}
}

// appendSSEBatch adds the SSE encoding of the first n events of pending (all
// of them when n is larger) to b, after a drop meta message when dropped > 0.
// Payload lines of at least b's crossover are referenced, unless copyAll is
// set; the delimiters around them are copied.
func appendSSEBatch(b *writev.Batch, dropped int64, pending []*delivery, n int, copyAll bool) {
	if copyAll {
		prev := b.Crossover
		b.Crossover = math.MaxInt
		defer func() { b.Crossover = prev }()
	}
	if dropped > 0 {
		var scratch [metaScratch]byte
		b.Copy(sseDataPrefix)
		b.Copy(push.AppendDropMeta(scratch[:0], dropped))
		b.Copy(sseEventEnd)
	}
	for _, d := range pending {
		for i := range d.events {
			if n == 0 {
				return
			}
			n--
			e := &d.events[i]
			if !e.multiline {
				b.Copy(sseDataPrefix)
				b.Add(e.payload())
				b.Copy(sseEventEnd)
				continue
			}
			for p := e.payload(); ; {
				line, rest, found := push.CutLine(p)
				b.Copy(sseDataPrefix)
				b.Add(line)
				b.Copy(sseLineEnd)
				if !found {
					break
				}
				p = rest
			}
			b.Copy(sseLineEnd)
		}
	}
}
