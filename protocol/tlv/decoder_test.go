package tlv_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/tidegate/tidegate/protocol/tlv"
)

// refDecode is a slow decoding of the header at the start of b, written
// from the package doc's rules independently of the package's own (which
// Format.Decode and Decoder share): the fields read a byte at a time into a
// uint64, the body length compared with MaxBody, and, for a request, the
// message type with the reserved error type, with n = 0 on an error.
func refDecode(f tlv.Format, b []byte, request bool) (tlv.Header, int, error) {
	if err := f.Validate(); err != nil {
		return tlv.Header{}, 0, err
	}
	hl := f.TypeWidth + f.LengthWidth
	if len(b) < hl {
		return tlv.Header{}, 0, nil
	}
	var raw, length uint64
	for i := range hl {
		if i < f.TypeWidth {
			raw = raw<<8 | uint64(b[i])
		} else {
			length = length<<8 | uint64(b[i])
		}
	}
	keepAlive := uint64(1) << (8*f.TypeWidth - 1)
	h := tlv.Header{Type: uint16(raw &^ keepAlive), KeepAlive: raw&keepAlive != 0}
	if length > uint64(f.MaxBody) {
		return h, 0, &tlv.FrameError{Reason: tlv.ReasonBodyTooLarge, Value: int64(length), Limit: int64(f.MaxBody)}
	}
	h.Length = int(length)
	if request && uint64(h.Type) == keepAlive-1 {
		return h, 0, &tlv.FrameError{Reason: tlv.ReasonErrorTypeFromClient, Value: int64(h.Type)}
	}
	return h, hl + h.Length, nil
}

// decodeRequest is what a server did before Decoder: Decode, then
// CheckRequest on a whole header, with n = 0 on an error.
func decodeRequest(f tlv.Format, b []byte) (tlv.Header, int, error) {
	h, n, err := f.Decode(b)
	if err == nil && n != 0 {
		if err = f.CheckRequest(h); err != nil {
			n = 0
		}
	}
	return h, n, err
}

// sameResult compares two decodings, errors by value.
func sameResult(t *testing.T, what string, in []byte, h1 tlv.Header, n1 int, e1 error, h2 tlv.Header, n2 int, e2 error) {
	t.Helper()
	if h1 != h2 || n1 != n2 || (e1 == nil) != (e2 == nil) || (e1 != nil && !reflect.DeepEqual(e1, e2)) {
		t.Fatalf("%s(% x): %+v %d %v, want %+v %d %v", what, in, h1, n1, e1, h2, n2, e2)
	}
}

// checkDecodings checks Format.Decode, Decoder.Decode, Decoder.DecodeRequest
// and Decode followed by CheckRequest against refDecode on in.
func checkDecodings(t *testing.T, f tlv.Format, d tlv.Decoder, in []byte) {
	t.Helper()
	wh, wn, werr := refDecode(f, in, false)
	h, n, err := f.Decode(in)
	sameResult(t, "Format.Decode", in, h, n, err, wh, wn, werr)
	h, n, err = d.Decode(in)
	sameResult(t, "Decoder.Decode", in, h, n, err, wh, wn, werr)
	wh, wn, werr = refDecode(f, in, true)
	h, n, err = d.DecodeRequest(in)
	sameResult(t, "Decoder.DecodeRequest", in, h, n, err, wh, wn, werr)
	h, n, err = decodeRequest(f, in)
	sameResult(t, "Decode+CheckRequest", in, h, n, err, wh, wn, werr)
}

// decoderInputs are the edge cases of f's headers: every header length
// around HeaderLen, the error type with and without keep-alive, lengths at,
// above and far above MaxBody, and the largest field values.
func decoderInputs(f tlv.Format) [][]byte {
	kb := f.KeepAliveBit()
	var ins [][]byte
	for _, typ := range []uint16{0, 1, f.ErrorType() - 1, f.ErrorType(), kb, kb | 1, kb | f.ErrorType()} {
		for _, length := range []uint64{0, 1, uint64(f.MaxBody) - 1, uint64(f.MaxBody), uint64(f.MaxBody) + 1, fieldMax(f)} {
			hdr := rawHeader(f, typ, min(length, fieldMax(f)))
			for cut := 0; cut <= len(hdr); cut++ {
				ins = append(ins, hdr[:cut])
			}
			ins = append(ins, append(hdr, "body"...))
		}
	}
	return ins
}

// TestDecodeMatchesReference checks Format.Decode, Decoder.Decode and
// DecodeRequest, and Decode with CheckRequest, against refDecode on edge
// cases and random bytes, for every width combination.
func TestDecodeMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 5))
	for _, f := range testFormats(t) {
		t.Run(name(f), func(t *testing.T) {
			d, err := f.Decoder()
			if err != nil {
				t.Fatal(err)
			}
			if d.Format() != f || d.HeaderLen() != f.HeaderLen() {
				t.Fatalf("Format() %+v HeaderLen() %d, want %+v %d", d.Format(), d.HeaderLen(), f, f.HeaderLen())
			}
			ins := decoderInputs(f)
			for range 2000 {
				b := make([]byte, rng.IntN(9))
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				ins = append(ins, b)
			}
			for _, in := range ins {
				checkDecodings(t, f, d, in)
			}
		})
	}
}

// TestRefDecode pins refDecode itself to hand-computed results, so that the
// comparisons with it test the package against the rules.
func TestRefDecode(t *testing.T) {
	f24 := tlv.Format{TypeWidth: 2, LengthWidth: 4, MaxBody: 1 << 20}
	f12 := tlv.Format{TypeWidth: 1, LengthWidth: 2, MaxBody: 100}
	tests := []struct {
		f       tlv.Format
		in      []byte
		request bool
		h       tlv.Header
		n       int
		reason  tlv.Reason
	}{
		{f24, []byte{0x92, 0x34, 0, 0x01, 0x02, 0x03, 'x'}, false, tlv.Header{Type: 0x1234, KeepAlive: true, Length: 0x10203}, 6 + 0x10203, 0},
		{f24, []byte{0x7F, 0xFF, 0, 0, 0, 0}, true, tlv.Header{Type: 0x7FFF}, 0, tlv.ReasonErrorTypeFromClient},
		{f24, []byte{0x7F, 0xFF, 0, 0, 0, 0}, false, tlv.Header{Type: 0x7FFF}, 6, 0},
		{f24, []byte{0x00, 0x01, 0, 0x10, 0, 1}, false, tlv.Header{Type: 1}, 0, tlv.ReasonBodyTooLarge},
		{f24, []byte{0x00, 0x01, 0, 0x10, 0}, false, tlv.Header{}, 0, 0},
		{f12, []byte{0x85, 0, 100}, false, tlv.Header{Type: 5, KeepAlive: true, Length: 100}, 103, 0},
		{f12, []byte{0xFF, 0, 101}, true, tlv.Header{Type: 0x7F, KeepAlive: true}, 0, tlv.ReasonBodyTooLarge},
	}
	for _, tt := range tests {
		h, n, err := refDecode(tt.f, tt.in, tt.request)
		var fe *tlv.FrameError
		if h != tt.h || n != tt.n || (tt.reason == 0) != (err == nil) || (err != nil && (!errors.As(err, &fe) || fe.Reason != tt.reason)) {
			t.Errorf("refDecode(%s, % x, %v) = %+v %d %v, want %+v %d %v", name(tt.f), tt.in, tt.request, h, n, err, tt.h, tt.n, tt.reason)
		}
	}
}

func TestDecoderReasons(t *testing.T) {
	f := tlv.Format{TypeWidth: 1, LengthWidth: 2, MaxBody: 100}
	d, err := f.Decoder()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		in     []byte
		reason tlv.Reason // 0: no error
		n      int
	}{
		{"request", []byte{0x81, 0, 3, 'a'}, 0, 6},
		{"error type, partial body", []byte{0xFF, 0, 3, 'a'}, tlv.ReasonErrorTypeFromClient, 0},
		{"error type, no keep-alive", []byte{0x7F, 0, 0}, tlv.ReasonErrorTypeFromClient, 0},
		{"error type, body too large", []byte{0x7F, 0, 101}, tlv.ReasonBodyTooLarge, 0},
		{"body too large", []byte{0x01, 0xFF, 0xFF}, tlv.ReasonBodyTooLarge, 0},
		{"partial error type", []byte{0x7F, 0}, 0, 0},
	}
	for _, tt := range tests {
		_, n, err := d.DecodeRequest(tt.in)
		var fe *tlv.FrameError
		switch {
		case tt.reason == 0 && err != nil, n != tt.n:
			t.Errorf("%s: n %d err %v, want n %d and no error", tt.name, n, err, tt.n)
		case tt.reason != 0 && (!errors.As(err, &fe) || fe.Reason != tt.reason):
			t.Errorf("%s: err %v, want reason %v", tt.name, err, tt.reason)
		}
	}
}

func TestDecoderInvalid(t *testing.T) {
	if _, err := (tlv.Format{TypeWidth: 3, LengthWidth: 4, MaxBody: 1}).Decoder(); err == nil {
		t.Fatal("Decoder of a 3-byte type width: no error")
	}
	var zero tlv.Decoder
	for _, in := range [][]byte{nil, {1, 2, 3, 4, 5, 6, 7}} {
		if h, n, err := zero.Decode(in); h != (tlv.Header{}) || n != 0 || err != nil {
			t.Fatalf("zero Decoder.Decode(% x) = %+v %d %v, want need-more", in, h, n, err)
		}
		if h, n, err := zero.DecodeRequest(in); h != (tlv.Header{}) || n != 0 || err != nil {
			t.Fatalf("zero Decoder.DecodeRequest(% x) = %+v %d %v, want need-more", in, h, n, err)
		}
	}
	if zero.Format() != (tlv.Format{}) || zero.HeaderLen() != 0 {
		t.Fatalf("zero Decoder: Format %+v HeaderLen %d", zero.Format(), zero.HeaderLen())
	}
}

func TestDecoderAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("alloc counting in -short mode")
	}
	for _, f := range testFormats(t) {
		d, _ := f.Decoder()
		frame := f.AppendFrame(nil, tlv.Header{Type: 5, KeepAlive: true}, []byte("payload"))
		var sink int
		if a := testing.AllocsPerRun(100, func() {
			_, n, _ := d.Decode(frame)
			_, m, _ := d.DecodeRequest(frame[:f.HeaderLen()-1])
			sink += n + m
		}); a != 0 {
			t.Errorf("%s: Decoder allocates %v times per run", name(f), a)
		}
		_ = sink
	}
}
