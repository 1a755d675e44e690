package tlv_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/tidegate/tidegate/protocol/tlv"
)

// fuzzFormat maps a fuzzer-chosen selector to one of the formats: the low
// two bits pick the widths, the next two bits the MaxBody.
func fuzzFormat(sel uint8) tlv.Format {
	tw := 1 + int(sel&1)
	lw := 2 + 2*int(sel>>1&1)
	limit := math.MaxUint16
	if lw == 4 {
		limit = maxInt32Body(tw + lw)
	}
	maxBodies := [4]int{1, 300, 1 << 20, limit}
	return tlv.Format{TypeWidth: tw, LengthWidth: lw, MaxBody: min(maxBodies[sel>>2&3], limit)}
}

func FuzzDecode(f *testing.F) {
	for sel := range uint8(16) {
		tf := fuzzFormat(sel)
		f.Add(sel, []byte{})
		f.Add(sel, tf.AppendFrame(nil, tlv.Header{Type: 1, KeepAlive: true}, []byte("x")))
		f.Add(sel, tf.AppendError(nil, "oops"))
		f.Add(sel, tf.AppendHeader(nil, tlv.Header{Type: 2, Length: tf.MaxBody})[:tf.HeaderLen()-1])
		f.Add(sel, bytes.Repeat([]byte{0xFF}, 16)) // all-ones: error type, keep-alive, huge length
		var two []byte
		two = tf.AppendFrame(two, tlv.Header{Type: 3}, nil)
		two = tf.AppendFrame(two, tlv.Header{Type: tf.ErrorType() - 1}, []byte("hello"))
		f.Add(sel, two)
	}
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		tf := fuzzFormat(sel)
		if err := tf.Validate(); err != nil {
			t.Fatalf("fuzzFormat(%d) = %+v: %v", sel, tf, err)
		}
		hl := tf.HeaderLen()
		dec, err := tf.Decoder()
		if err != nil {
			t.Fatalf("Decoder of %+v: %v", tf, err)
		}
		// Walk the input as a stream of frames while bodies are complete.
		for rest := data; ; {
			checkDecodings(t, tf, dec, rest)
			h, n, err := tf.Decode(rest)
			if n != 0 && n < hl {
				t.Fatalf("n = %d, want 0 or >= %d", n, hl)
			}
			if err != nil {
				var fe *tlv.FrameError
				if !errors.As(err, &fe) || fe.Reason != tlv.ReasonBodyTooLarge {
					t.Fatalf("unexpected error %v", err)
				}
				if n != 0 || len(rest) < hl || fe.Value <= int64(tf.MaxBody) || fe.Limit != int64(tf.MaxBody) {
					t.Fatalf("bad error: n=%d len=%d %+v", n, len(rest), *fe)
				}
				return
			}
			if n == 0 {
				if len(rest) >= hl {
					t.Fatalf("n = 0 with %d >= %d bytes", len(rest), hl)
				}
				if h != (tlv.Header{}) {
					t.Fatalf("need-more returned header %+v", h)
				}
				return
			}
			if n-hl != h.Length {
				t.Fatalf("n-HeaderLen = %d, Length = %d", n-hl, h.Length)
			}
			if h.Length < 0 || h.Length > tf.MaxBody || h.Type > tf.ErrorType() {
				t.Fatalf("header out of range: %+v", h)
			}
			if enc := tf.AppendHeader(nil, h); !bytes.Equal(enc, rest[:hl]) {
				t.Fatalf("re-encoded header % x, input % x", enc, rest[:hl])
			}
			put := make([]byte, hl)
			tf.PutHeader(put, h)
			if !bytes.Equal(put, rest[:hl]) {
				t.Fatalf("PutHeader % x, input % x", put, rest[:hl])
			}
			if (tf.CheckRequest(h) != nil) != (h.Type == tf.ErrorType()) {
				t.Fatalf("CheckRequest(%+v) inconsistent", h)
			}
			if n > len(rest) {
				return // body incomplete
			}
			// Re-encoding the whole frame reproduces the input.
			if frame := tf.AppendFrame(nil, h, rest[hl:n]); !bytes.Equal(frame, rest[:n]) {
				t.Fatalf("re-encoded frame differs")
			}
			rest = rest[n:]
		}
	})
}
