package push

import (
	"bytes"
	"math/rand/v2"
	"testing"

	pushproto "github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/reactor"
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
		body, err := pushproto.AppendPublish(nil, []byte("t"), payloads...)
		if err != nil {
			t.Fatal(err)
		}
		p, err := pushproto.ParsePublish(body, pushproto.Limits{MaxEvents: 1 << 20, MaxEventSize: 1 << 30})
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
		evs = append(evs, pushproto.AppendEvent(nil, pushproto.OpNonDataError, pushproto.AppendDropMeta(nil, dropped)))
	}
	for _, payloads := range shape {
		for _, p := range payloads {
			evs = append(evs, pushproto.AppendEvent(nil, pushproto.OpNext, p))
		}
	}
	return pushproto.AppendFrame(nil, topic, evs...)
}

// plainSSE is the reference SSE encoding, concatenated.
func plainSSE(dropped int64, shape [][][]byte) []byte {
	var out []byte
	if dropped > 0 {
		out = pushproto.AppendSSEEvent(out, pushproto.AppendDropMeta(nil, dropped))
	}
	for _, payloads := range shape {
		for _, p := range payloads {
			out = pushproto.AppendSSEEvent(out, p)
		}
	}
	return out
}

func batchShapes() [][][][]byte {
	pay := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	big := 2 * reactor.DefaultCrossover
	shapes := [][][][]byte{
		{{[]byte("single")}},
		{{}},
		{{}, {[]byte("a"), pay(big, 'b')}, {}},
		{{{}, {}, pay(0, 0)}},
		{{pay(big, 'x'), pay(reactor.DefaultCrossover, 'y'), pay(reactor.DefaultCrossover-1, 'z')}},
		{{[]byte("multi\nline\r\nwith\rbreaks\n"), append(pay(big, 'q'), "\nend"...)}},
	}
	rng := rand.New(rand.NewPCG(2026, 1130))
	for range 24 {
		var shape [][][]byte
		for range 1 + rng.IntN(6) {
			var inner [][]byte
			for range rng.IntN(8) {
				n := rng.IntN(3 * reactor.DefaultCrossover)
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

func joined(b *reactor.Batch) []byte { return bytes.Join(b.Bytes(), nil) }

func TestBatchMatchesConcatenation(t *testing.T) {
	topic := []byte("orders")
	var b reactor.Batch
	for i, shape := range batchShapes() {
		for _, dropped := range []int64{0, 7} {
			ds, total := makeDeliveries(t, shape)
			appendLegacyBatch(&b, topic, dropped, ds, total)
			if got, want := joined(&b), plainLegacy(topic, dropped, shape); !bytes.Equal(got, want) {
				t.Fatalf("shape %d dropped %d: legacy batch differs from concatenation\n got %q\nwant %q", i, dropped, got, want)
			}
			b.Reset()
			appendSSEBatch(&b, dropped, ds)
			if got, want := joined(&b), plainSSE(dropped, shape); !bytes.Equal(got, want) {
				t.Fatalf("shape %d dropped %d: SSE batch differs from concatenation\n got %q\nwant %q", i, dropped, got, want)
			}
			b.Reset()
		}
	}
}

func TestOversizedBatchFallsBackToOneCopy(t *testing.T) {
	n := reactor.MaxIovecs + 5
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = bytes.Repeat([]byte{byte('a' + i%26)}, 2*reactor.DefaultCrossover)
	}
	shape := [][][]byte{payloads}
	ds, total := makeDeliveries(t, shape)
	var b reactor.Batch
	appendLegacyBatch(&b, []byte("big"), 0, ds, total)
	iov := b.Bytes()
	if len(iov) != 1 {
		t.Fatalf("legacy batch of %d events is %d slices, want the one-copy fallback", n, len(iov))
	}
	if !bytes.Equal(iov[0], plainLegacy([]byte("big"), 0, shape)) {
		t.Fatal("legacy fallback bytes differ from concatenation")
	}
	b.Reset()
	appendSSEBatch(&b, 0, ds)
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
		payloads[i] = bytes.Repeat([]byte{'p'}, 2*reactor.DefaultCrossover)
	}
	ds, total := makeDeliveries(t, [][][]byte{payloads})
	var b reactor.Batch
	appendLegacyBatch(&b, []byte("t"), 0, ds, total)
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
	appendSSEBatch(&b, 0, ds)
	// "data: " | payload | "\n\ndata: " | payload | ... | "\n\n": 64 references and 65 copied runs.
	if got := b.Segments(); got != 64+65 {
		t.Fatalf("SSE: %d segments, want 129", got)
	}
	b.Reset()
}
