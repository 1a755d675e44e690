package pushserver

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/reactor/writev"
)

// makeDeliveries builds deliveries (the "inner lists" of a batch) from payloads.
func makeDeliveries(t testing.TB, shape [][][]byte) ([]*delivery, int) {
	t.Helper()
	var ds []*delivery
	total := 0
	for _, payloads := range shape {
		if len(payloads) == 0 { // an empty inner list: a delivery without events
			ds = append(ds, &delivery{})
			continue
		}
		body, err := push.AppendPublish(nil, []byte("t"), payloads...)
		if err != nil {
			t.Fatal(err)
		}
		p, err := push.ParsePublish(body, push.Limits{MaxEvents: 1 << 20, MaxEventSize: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		d := newDelivery(&p)
		ds = append(ds, d)
		total += d.bytes
	}
	return ds, total
}

// plainLegacy is the reference: the whole frame concatenated into one array.
func plainLegacy(topic []byte, dropped int64, shape [][][]byte) []byte {
	var evs [][]byte
	if dropped > 0 {
		evs = append(evs, push.AppendEvent(nil, push.OpNonDataError, push.AppendDropMeta(nil, dropped)))
	}
	for _, payloads := range shape {
		for _, p := range payloads {
			evs = append(evs, push.AppendEvent(nil, push.OpNext, p))
		}
	}
	return push.AppendFrame(nil, topic, evs...)
}

// plainSSE is the reference SSE encoding, concatenated.
func plainSSE(dropped int64, shape [][][]byte) []byte {
	var out []byte
	if dropped > 0 {
		out = push.AppendSSEEvent(out, push.AppendDropMeta(nil, dropped))
	}
	for _, payloads := range shape {
		for _, p := range payloads {
			out = push.AppendSSEEvent(out, p)
		}
	}
	return out
}

func batchShapes() [][][][]byte {
	pay := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	big := 2 * writev.DefaultCrossover
	shapes := [][][][]byte{
		{{[]byte("single")}},
		{{}},
		{{}, {[]byte("a"), pay(big, 'b')}, {}},
		{{{}, {}, pay(0, 0)}},
		{{pay(big, 'x'), pay(writev.DefaultCrossover, 'y'), pay(writev.DefaultCrossover-1, 'z')}},
		{{[]byte("multi\nline\r\nwith\rbreaks\n"), append(pay(big, 'q'), "\nend"...)}},
	}
	rng := rand.New(rand.NewPCG(2026, 1130))
	for range 24 {
		var shape [][][]byte
		for range 1 + rng.IntN(6) {
			var inner [][]byte
			for range rng.IntN(8) {
				n := rng.IntN(3 * writev.DefaultCrossover)
				p := make([]byte, n)
				for i := range p {
					p[i] = 'a' + byte(rng.IntN(26))
					if rng.IntN(200) == 0 {
						p[i] = '\n'
					}
				}
				inner = append(inner, p)
			}
			shape = append(shape, inner)
		}
		shapes = append(shapes, shape)
	}
	return shapes
}

func joined(b *writev.Batch) []byte { return bytes.Join(b.Bytes(), nil) }

func TestBatchMatchesConcatenation(t *testing.T) {
	topic := []byte("orders")
	var b writev.Batch
	for i, shape := range batchShapes() {
		for _, dropped := range []int64{0, 7} {
			ds, total := makeDeliveries(t, shape)
			appendLegacyBatch(&b, topic, dropped, ds, math.MaxInt, total, false)
			if got, want := joined(&b), plainLegacy(topic, dropped, shape); !bytes.Equal(got, want) {
				t.Fatalf("shape %d dropped %d: legacy batch differs from concatenation\n got %q\nwant %q", i, dropped, got, want)
			}
			b.Reset()
			appendSSEBatch(&b, dropped, ds, math.MaxInt, false)
			if got, want := joined(&b), plainSSE(dropped, shape); !bytes.Equal(got, want) {
				t.Fatalf("shape %d dropped %d: SSE batch differs from concatenation\n got %q\nwant %q", i, dropped, got, want)
			}
			b.Reset()
		}
	}
}

func TestOversizedBatchFallsBackToOneCopy(t *testing.T) {
	n := writev.MaxIovecs + 5
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = bytes.Repeat([]byte{byte('a' + i%26)}, 2*writev.DefaultCrossover)
	}
	shape := [][][]byte{payloads}
	ds, total := makeDeliveries(t, shape)
	var b writev.Batch
	appendLegacyBatch(&b, []byte("big"), 0, ds, math.MaxInt, total, false)
	iov := b.Bytes()
	if len(iov) != 1 {
		t.Fatalf("legacy batch of %d events is %d slices, want the one-copy fallback", n, len(iov))
	}
	if !bytes.Equal(iov[0], plainLegacy([]byte("big"), 0, shape)) {
		t.Fatal("legacy fallback bytes differ from concatenation")
	}
	b.Reset()
	appendSSEBatch(&b, 0, ds, math.MaxInt, false)
	iov = b.Bytes()
	if len(iov) != 1 || !bytes.Equal(iov[0], plainSSE(0, shape)) {
		t.Fatalf("SSE fallback: %d slices or bytes differ", len(iov))
	}
}

// TestNormalBatchIsWrittenAsManyIovecs guards against a silent consolidation:
// 64 events above the crossover must stay 64 referenced slices.
func TestNormalBatchIsWrittenAsManyIovecs(t *testing.T) {
	payloads := make([][]byte, 64)
	for i := range payloads {
		payloads[i] = bytes.Repeat([]byte{'p'}, 2*writev.DefaultCrossover)
	}
	ds, total := makeDeliveries(t, [][][]byte{payloads})
	var b writev.Batch
	appendLegacyBatch(&b, []byte("t"), 0, ds, math.MaxInt, total, false)
	// One copied frame header, then one referenced slice per event.
	if got := b.Segments(); got != 1+64 {
		t.Fatalf("legacy: %d segments, want 65", got)
	}
	for i, s := range b.Bytes()[1:] {
		if &s[0] != &ds[0].events[i].wire[0] {
			t.Fatalf("legacy: event %d was copied, want it referenced", i)
		}
	}
	b.Reset()
	appendSSEBatch(&b, 0, ds, math.MaxInt, false)
	// "data: " | payload | "\n\ndata: " | payload | ... | "\n\n": 64 references and 65 copied runs.
	if got := b.Segments(); got != 64+65 {
		t.Fatalf("SSE: %d segments, want 129", got)
	}
	b.Reset()
}

// prefixShape is the first n events of shape, inner lists kept.
func prefixShape(shape [][][]byte, n int) [][][]byte {
	var out [][][]byte
	for _, inner := range shape {
		var kept [][]byte
		for _, p := range inner {
			if n == 0 {
				break
			}
			kept = append(kept, p)
			n--
		}
		out = append(out, kept)
	}
	return out
}

func countEvents(shape [][][]byte) int {
	n := 0
	for _, inner := range shape {
		n += len(inner)
	}
	return n
}

// TestCutBatchMatchesConcatenation builds batches of the first n events, as
// flush does when a batch is cut to the room left, referenced and copied,
// and checks their bytes against the reference and their size against what
// flush computes before building them.
func TestCutBatchMatchesConcatenation(t *testing.T) {
	topic := []byte("orders")
	var b writev.Batch
	for i, shape := range batchShapes() {
		ds, _ := makeDeliveries(t, shape)
		total := countEvents(shape)
		for _, n := range []int{0, 1, total / 2, total - 1, total} {
			if n < 0 || n > total {
				continue
			}
			pre := prefixShape(shape, n)
			for _, dropped := range []int64{0, 12345} {
				for _, copyAll := range []bool{false, true} {
					events, wire := fitEvents(ds, false, prefixBytes(ds, false, n))
					if events != n {
						t.Fatalf("shape %d: fitEvents fits %d events in the size of the first %d", i, events, n)
					}
					appendLegacyBatch(&b, topic, dropped, ds, n, wire, copyAll)
					want := plainLegacy(topic, dropped, pre)
					if got := joined(&b); !bytes.Equal(got, want) {
						t.Fatalf("shape %d n %d dropped %d copy %v: legacy batch differs\n got %q\nwant %q", i, n, dropped, copyAll, got, want)
					}
					if b.Len() != batchOverhead(false, topic, dropped)+wire {
						t.Fatalf("shape %d n %d: legacy batch is %d bytes, flush computes %d", i, n, b.Len(), batchOverhead(false, topic, dropped)+wire)
					}
					if copyAll && b.Len() > 0 && b.Segments() != 1 {
						t.Fatalf("shape %d n %d: copied legacy batch is %d segments, want 1", i, n, b.Segments())
					}
					b.Reset()
					appendSSEBatch(&b, dropped, ds, n, copyAll)
					want = plainSSE(dropped, pre)
					if got := joined(&b); !bytes.Equal(got, want) {
						t.Fatalf("shape %d n %d dropped %d copy %v: SSE batch differs\n got %q\nwant %q", i, n, dropped, copyAll, got, want)
					}
					if size := batchOverhead(true, nil, dropped) + prefixBytes(ds, true, n); b.Len() != size {
						t.Fatalf("shape %d n %d: SSE batch is %d bytes, flush computes %d", i, n, b.Len(), size)
					}
					if copyAll && b.Len() > 0 && b.Segments() != 1 {
						t.Fatalf("shape %d n %d: copied SSE batch is %d segments, want 1", i, n, b.Segments())
					}
					b.Reset()
				}
			}
		}
	}
}

// prefixBytes is the encoded size of the first n events of ds, summed from
// the reference encodings.
func prefixBytes(ds []*delivery, sse bool, n int) int {
	size := 0
	for _, d := range ds {
		for i := range d.events {
			if n == 0 {
				return size
			}
			n--
			if sse {
				size += len(push.AppendSSEEvent(nil, d.events[i].payload()))
			} else {
				size += len(d.events[i].wire)
			}
		}
	}
	return size
}

func TestFitEventsTakesTheLongestPrefixThatFits(t *testing.T) {
	ds, _ := makeDeliveries(t, [][][]byte{{[]byte("aa"), []byte("bbbb")}, {}, {[]byte("c\nd")}})
	// SSE sizes: "data: aa\n\n" 10, "data: bbbb\n\n" 12, "data: c\ndata: d\n\n" 17.
	for _, c := range []struct{ limit, events, bytes int }{
		{-5, 0, 0}, {0, 0, 0}, {9, 0, 0}, {10, 1, 10}, {21, 1, 10}, {22, 2, 22}, {38, 2, 22}, {39, 3, 39}, {1 << 20, 3, 39},
	} {
		if e, n := fitEvents(ds, true, c.limit); e != c.events || n != c.bytes {
			t.Errorf("fitEvents(limit %d) = %d events, %d bytes; want %d, %d", c.limit, e, n, c.events, c.bytes)
		}
	}
	if e, n := fitEvents(ds, false, 7+9); e != 2 || n != 16 { // legacy: 5-byte header + payload
		t.Errorf("legacy fitEvents(16) = %d, %d; want 2, 16", e, n)
	}
}
