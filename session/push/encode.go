package push

import (
	pushproto "github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/reactor"
)

// event is one published event, stored once and shared read-only by every
// subscriber: wire is its legacy encoding, header then payload.
type event struct {
	wire      []byte
	multiline bool // the payload has line breaks: SSE needs several data lines
}

func (e *event) payload() []byte { return e.wire[pushproto.EventHeaderLen:] }

// delivery is the events of one publish frame. It is immutable once built.
type delivery struct {
	events []event
	bytes  int // sum of len(wire)
}

// newDelivery stores the events of p once: one array for all of them, each
// event in its legacy encoding.
func newDelivery(p *pushproto.Publish) *delivery {
	arena := make([]byte, p.Count*pushproto.EventHeaderLen+p.PayloadBytes)
	d := &delivery{events: make([]event, 0, p.Count), bytes: len(arena)}
	off := 0
	for it := p.Events(); ; {
		payload, ok := it.Next()
		if !ok {
			break
		}
		w := arena[off : off+pushproto.EventHeaderLen+len(payload)]
		pushproto.PutEventHeader(w, pushproto.OpNext, len(payload))
		copy(w[pushproto.EventHeaderLen:], payload)
		d.events = append(d.events, event{wire: w, multiline: pushproto.HasLineBreak(payload)})
		off += len(w)
	}
	return d
}

var (
	sseDataPrefix = []byte(pushproto.SSEDataPrefix)
	sseLineEnd    = []byte(pushproto.SSELineEnd)
	sseEventEnd   = []byte(pushproto.SSEEventEnd)
)

// metaScratch is big enough for the drop meta message.
const metaScratch = 96

// legacyCrossover is the event size from which legacy TCP batches reference
// events instead of copying them. A legacy event is one whole slice (header
// and payload), the "bare" shape, whose crossover is lower than the
// delimited SSE shape's that sets reactor.DefaultCrossover: at 2 KiB events,
// referencing was 16% cheaper in BenchmarkBatchWrite and 3.7% cheaper in
// reactor's BenchmarkBatchCrossover (benchmarks/results/2026-11-30-push.md).
const legacyCrossover = 2048

// appendLegacyBatch adds one legacy frame to b: topic as its name, an
// OpNonDataError drop report first when dropped > 0, then the events of
// pending, whose encoded sizes total eventBytes. Events of at least b's
// crossover are referenced, not copied.
func appendLegacyBatch(b *reactor.Batch, topic []byte, dropped int64, pending []*delivery, eventBytes int) {
	prev := b.Crossover
	b.Crossover = legacyCrossover
	defer func() { b.Crossover = prev }()
	var meta []byte
	var scratch [metaScratch]byte
	if dropped > 0 {
		meta = pushproto.AppendDropMeta(scratch[:0], dropped)
		eventBytes += pushproto.EventHeaderLen + len(meta)
	}
	h := b.Reserve(pushproto.FrameHeaderLen(len(topic)))
	pushproto.PutFrameHeader(h, topic, eventBytes)
	if meta != nil {
		m := b.Reserve(pushproto.EventHeaderLen + len(meta))
		pushproto.PutEventHeader(m, pushproto.OpNonDataError, len(meta))
		copy(m[pushproto.EventHeaderLen:], meta)
	}
	for _, d := range pending {
		for i := range d.events {
			b.Add(d.events[i].wire)
		}
	}
}

// appendSSEBatch adds the SSE encoding of pending to b, after a drop meta
// message when dropped > 0. Payload lines of at least b's crossover are
// referenced; the delimiters around them are copied.
func appendSSEBatch(b *reactor.Batch, dropped int64, pending []*delivery) {
	if dropped > 0 {
		var scratch [metaScratch]byte
		b.Copy(sseDataPrefix)
		b.Copy(pushproto.AppendDropMeta(scratch[:0], dropped))
		b.Copy(sseEventEnd)
	}
	for _, d := range pending {
		for i := range d.events {
			e := &d.events[i]
			if !e.multiline {
				b.Copy(sseDataPrefix)
				b.Add(e.payload())
				b.Copy(sseEventEnd)
				continue
			}
			for p := e.payload(); ; {
				line, rest, found := pushproto.CutLine(p)
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
