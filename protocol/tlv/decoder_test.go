package tlv_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/tidegate/tidegate/protocol/tlv"
)

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

// TestDecoderMatchesFormat checks that Decoder.Decode gives what
// Format.Decode gives, and DecodeRequest what Decode and CheckRequest give,
// on edge cases and random bytes, for every width combination.
func TestDecoderMatchesFormat(t *testing.T) {
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
				h, n, err := d.Decode(in)
				wh, wn, werr := f.Decode(in)
				sameResult(t, "Decode", in, h, n, err, wh, wn, werr)
				h, n, err = d.DecodeRequest(in)
				wh, wn, werr = decodeRequest(f, in)
				sameResult(t, "DecodeRequest", in, h, n, err, wh, wn, werr)
			}
		})
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
