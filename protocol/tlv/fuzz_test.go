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

// FuzzEncode round-trips headers through the Encoder and the Decoder: a
// header that fits the format (judged here, from the rules) is written as
// rawHeader writes it, by every encoding path, and decodes back to itself
// (or, above MaxBody, to the error naming its length); one that does not
// fit is rejected with ErrHeaderRange and writes nothing.
func FuzzEncode(f *testing.F) {
	for sel := range uint8(16) {
		tf := fuzzFormat(sel)
		et, limit := int64(tf.ErrorType()), int64(lengthLimit(tf))
		for _, c := range []struct {
			typ    int64
			length int64
		}{{0, 0}, {1, 1}, {et, int64(tf.MaxBody)}, {et, int64(tf.MaxBody) + 1}, {et + 1, 0}, {0, limit}, {0, limit + 1}, {1, -1}, {0xFFFF, math.MaxInt64}} {
			f.Add(sel, uint16(c.typ), c.typ%2 == 0, c.length)
		}
	}
	f.Fuzz(func(t *testing.T, sel uint8, typ uint16, keepAlive bool, length64 int64) {
		tf := fuzzFormat(sel)
		length := int(length64)
		if int64(length) != length64 {
			t.Skip("length does not fit an int on this platform")
		}
		e, err := tf.Encoder()
		if err != nil {
			t.Fatalf("Encoder of %+v: %v", tf, err)
		}
		dec, _ := tf.Decoder()
		h := tlv.Header{Type: typ, KeepAlive: keepAlive, Length: length}
		hl := tf.HeaderLen()
		fits := typ <= tf.ErrorType() && length >= 0 && length <= lengthLimit(tf)

		buf := bytes.Repeat([]byte{0xA5}, hl+1)
		err = e.PutHeader(buf, h)
		app, aerr := e.AppendHeader([]byte{0x5A}, h)
		if !fits {
			if !errors.Is(err, tlv.ErrHeaderRange) || aerr == nil || aerr.Error() != err.Error() {
				t.Fatalf("%+v in %+v: PutHeader %v, AppendHeader %v; want ErrHeaderRange", h, tf, err, aerr)
			}
			if !bytes.Equal(buf, bytes.Repeat([]byte{0xA5}, hl+1)) || !bytes.Equal(app, []byte{0x5A}) {
				t.Fatalf("%+v in %+v: rejected but wrote % x, appended % x", h, tf, buf, app)
			}
			mustPanic(t, "Format.PutHeader", func() { tf.PutHeader(buf, h) })
			return
		}
		want := rawHeader(tf, rawOf(tf, h), uint64(length))
		if err != nil || aerr != nil {
			t.Fatalf("%+v in %+v: PutHeader %v, AppendHeader %v", h, tf, err, aerr)
		}
		if !bytes.Equal(buf[:hl], want) || buf[hl] != 0xA5 || !bytes.Equal(app[1:], want) || app[0] != 0x5A {
			t.Fatalf("%+v in %+v: PutHeader % x, AppendHeader % x; want % x", h, tf, buf, app, want)
		}
		if fapp := tf.AppendHeader(nil, h); !bytes.Equal(fapp, want) {
			t.Fatalf("%+v in %+v: Format.AppendHeader % x, want % x", h, tf, fapp, want)
		}
		checkDecodings(t, tf, dec, buf[:hl])
		got, n, err := dec.Decode(buf[:hl])
		if length > tf.MaxBody {
			var fe *tlv.FrameError
			if !errors.As(err, &fe) || fe.Reason != tlv.ReasonBodyTooLarge || fe.Value != length64 || n != 0 {
				t.Fatalf("%+v in %+v: Decode = %d, %v; want body too large", h, tf, n, err)
			}
			return
		}
		if err != nil || got != h || n != hl+length {
			t.Fatalf("%+v in %+v: Decode = %+v, %d, %v", h, tf, got, n, err)
		}
	})
}
