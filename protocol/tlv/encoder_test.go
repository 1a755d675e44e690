package tlv_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/protocol/tlv"
)

// lengthLimit is the largest body length f's length field carries (an
// Encoder encodes up to it; MaxBody is the receiver's limit).
func lengthLimit(f tlv.Format) int {
	if f.LengthWidth == 2 {
		return math.MaxUint16
	}
	return maxInt32Body(f.HeaderLen())
}

// rawOf is the raw type field of h in f.
func rawOf(f tlv.Format, h tlv.Header) uint16 {
	if h.KeepAlive {
		return h.Type | f.KeepAliveBit()
	}
	return h.Type
}

// checkEncodes checks that every encoding path writes rawHeader's bytes for
// h, which fits f, and that the Decoder gives h back (or, for a length
// above MaxBody, the body-too-large error naming it).
func checkEncodes(t *testing.T, f tlv.Format, e tlv.Encoder, h tlv.Header) {
	t.Helper()
	hl := f.HeaderLen()
	want := rawHeader(f, rawOf(f, h), uint64(h.Length))

	put := bytes.Repeat([]byte{0xEE}, hl+2)
	if err := e.PutHeader(put, h); err != nil {
		t.Fatalf("%s: PutHeader(%+v): %v", name(f), h, err)
	}
	if !bytes.Equal(put[:hl], want) || put[hl] != 0xEE || put[hl+1] != 0xEE {
		t.Fatalf("%s: PutHeader(%+v) = % x, want % x then ee ee", name(f), h, put, want)
	}
	app, err := e.AppendHeader([]byte("pre"), h)
	if err != nil || string(app[:3]) != "pre" || !bytes.Equal(app[3:], want) {
		t.Fatalf("%s: AppendHeader(%+v) = % x, %v; want prefix + % x", name(f), h, app, err, want)
	}
	fput := make([]byte, hl)
	f.PutHeader(fput, h)
	if fapp := f.AppendHeader(nil, h); !bytes.Equal(fput, want) || !bytes.Equal(fapp, want) {
		t.Fatalf("%s: Format.PutHeader, AppendHeader(%+v) = % x, % x; want % x", name(f), h, fput, fapp, want)
	}

	d, _ := f.Decoder()
	got, n, err := d.Decode(put)
	if h.Length > f.MaxBody {
		var fe *tlv.FrameError
		if !errors.As(err, &fe) || fe.Reason != tlv.ReasonBodyTooLarge || fe.Value != int64(h.Length) || n != 0 {
			t.Fatalf("%s: Decode(% x) = %d, %v; want body too large (%d)", name(f), put[:hl], n, err, h.Length)
		}
		return
	}
	if err != nil || got != h || n != hl+h.Length {
		t.Fatalf("%s: Decode(% x) = %+v, %d, %v; want %+v, %d", name(f), put[:hl], got, n, err, h, hl+h.Length)
	}
}

// checkRejects checks that h, which does not fit f, is rejected by every
// encoding path with an error wrapping ErrHeaderRange that contains want,
// and that nothing is written.
func checkRejects(t *testing.T, f tlv.Format, e tlv.Encoder, h tlv.Header, want string) {
	t.Helper()
	hl := f.HeaderLen()
	put := bytes.Repeat([]byte{0xEE}, hl)
	err := e.PutHeader(put, h)
	if !errors.Is(err, tlv.ErrHeaderRange) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: PutHeader(%+v) = %v, want ErrHeaderRange naming %q", name(f), h, err, want)
	}
	if !bytes.Equal(put, bytes.Repeat([]byte{0xEE}, hl)) {
		t.Fatalf("%s: PutHeader(%+v) failed but wrote % x", name(f), h, put)
	}
	pre := make([]byte, 3, 16)
	app, aerr := e.AppendHeader(pre, h)
	if aerr == nil || aerr.Error() != err.Error() || len(app) != 3 || &app[0] != &pre[0] {
		t.Fatalf("%s: AppendHeader(%+v) = % x, %v; want the prefix back and %v", name(f), h, app, aerr, err)
	}
	mustPanic(t, "Format.PutHeader", func() { f.PutHeader(make([]byte, hl), h) })
	mustPanic(t, "Format.AppendHeader", func() { f.AppendHeader(nil, h) })
}

// TestEncoderTable checks each width combination at the edges of its
// fields: bytes, errors and what the Decoder makes of the bytes.
func TestEncoderTable(t *testing.T) {
	f12 := tlv.Format{TypeWidth: 1, LengthWidth: 2, MaxBody: 1000}
	f22 := tlv.Format{TypeWidth: 2, LengthWidth: 2, MaxBody: math.MaxUint16}
	f14 := tlv.Format{TypeWidth: 1, LengthWidth: 4, MaxBody: 1 << 20}
	f24 := tlv.Format{TypeWidth: 2, LengthWidth: 4, MaxBody: maxInt32Body(6)}
	tests := []struct {
		f       tlv.Format
		h       tlv.Header
		want    []byte // nil: rejected
		wantErr string
	}{
		{f12, tlv.Header{}, []byte{0, 0, 0}, ""},
		{f12, tlv.Header{Type: 0x7F, KeepAlive: true, Length: 1000}, []byte{0xFF, 0x03, 0xE8}, ""},
		{f12, tlv.Header{Type: 0x7E, Length: 1001}, []byte{0x7E, 0x03, 0xE9}, ""}, // above MaxBody: encoded, Decode rejects it
		{f12, tlv.Header{Type: 1, Length: math.MaxUint16}, []byte{0x01, 0xFF, 0xFF}, ""},
		{f12, tlv.Header{Type: 1, Length: math.MaxUint16 + 1}, nil, "body length 65536 out of range for the 2-byte length field (max 65535)"},
		{f12, tlv.Header{Type: 0x80}, nil, "message type 0x80 exceeds the 1-byte type field (max 0x7f)"},
		{f12, tlv.Header{Type: 0xFF, KeepAlive: true}, nil, "message type 0xff"},
		{f12, tlv.Header{Length: -1}, nil, "body length -1 out of range"},

		{f22, tlv.Header{Type: 0x7FFF, Length: math.MaxUint16}, []byte{0x7F, 0xFF, 0xFF, 0xFF}, ""},
		{f22, tlv.Header{Type: 0x1234, KeepAlive: true, Length: 0x0102}, []byte{0x92, 0x34, 0x01, 0x02}, ""},
		{f22, tlv.Header{Type: 0x8000}, nil, "message type 0x8000 exceeds the 2-byte type field (max 0x7fff)"},
		{f22, tlv.Header{Type: 0xFFFF, KeepAlive: true}, nil, "message type 0xffff"},
		{f22, tlv.Header{Length: math.MaxUint16 + 1}, nil, "body length 65536 out of range for the 2-byte length field"},

		{f14, tlv.Header{Type: 3, KeepAlive: true, Length: 258}, []byte{0x83, 0, 0, 0x01, 0x02}, ""},
		{f14, tlv.Header{Type: 0x7F, Length: 1 << 20}, []byte{0x7F, 0, 0x10, 0, 0}, ""},
		{f14, tlv.Header{Type: 0x7F, Length: 1<<20 + 1}, []byte{0x7F, 0, 0x10, 0, 1}, ""},
		{f14, tlv.Header{Length: math.MinInt}, nil, fmt.Sprintf("body length %d out of range", math.MinInt)},
		{f14, tlv.Header{Type: 0x80, Length: -1}, nil, "message type 0x80"}, // the type is named first

		{f24, tlv.Header{Type: 0x7FFF, KeepAlive: true, Length: maxInt32Body(6)}, rawHeader(f24, 0xFFFF, uint64(maxInt32Body(6))), ""},
		{f24, tlv.Header{Type: 0x0102, Length: 0x03040506}, []byte{0x01, 0x02, 0x03, 0x04, 0x05, 0x06}, ""},
		{f24, tlv.Header{Type: 0x8000}, nil, "message type 0x8000"},
		{f24, tlv.Header{Length: -1}, nil, "body length -1 out of range for the 4-byte length field"},
	}
	if math.MaxInt > math.MaxInt32 {
		// A 4-byte length field holds up to math.MaxUint32, but lengths above
		// math.MaxInt32 are never encoded (Java peers read a signed int).
		var big int64 = math.MaxInt32 + 1
		tests = append(tests, struct {
			f       tlv.Format
			h       tlv.Header
			want    []byte
			wantErr string
		}{f24, tlv.Header{Length: int(big)}, nil, "body length 2147483648 out of range for the 4-byte length field (max 2147483647)"})
	}
	for _, tt := range tests {
		e, err := tt.f.Encoder()
		if err != nil {
			t.Fatal(err)
		}
		if e.HeaderLen() != tt.f.HeaderLen() {
			t.Fatalf("%s: HeaderLen %d, want %d", name(tt.f), e.HeaderLen(), tt.f.HeaderLen())
		}
		if tt.want == nil {
			checkRejects(t, tt.f, e, tt.h, tt.wantErr)
			continue
		}
		if got := rawHeader(tt.f, rawOf(tt.f, tt.h), uint64(tt.h.Length)); !bytes.Equal(got, tt.want) {
			t.Fatalf("%s %+v: table's bytes % x differ from rawHeader's % x", name(tt.f), tt.h, tt.want, got)
		}
		checkEncodes(t, tt.f, e, tt.h)
	}
}

// TestEncoderEdges walks the edges of every test format's fields: types
// around ErrorType and the keep-alive bit, and lengths around 0, MaxBody
// and the length field's limit, with and without keep-alive.
func TestEncoderEdges(t *testing.T) {
	for _, f := range testFormats(t) {
		t.Run(name(f), func(t *testing.T) {
			e, err := f.Encoder()
			if err != nil {
				t.Fatal(err)
			}
			et, limit := f.ErrorType(), lengthLimit(f)
			lengths := []int{0, 1, 255, 256, f.MaxBody - 1, f.MaxBody, limit - 1, limit}
			if f.MaxBody < limit {
				lengths = append(lengths, f.MaxBody+1)
			}
			for _, ka := range []bool{false, true} {
				for _, typ := range []uint16{0, 1, 0xFF & et, et - 1, et} {
					for _, length := range lengths {
						checkEncodes(t, f, e, tlv.Header{Type: typ, KeepAlive: ka, Length: length})
					}
					for _, length := range []int{-1, math.MinInt, limit + 1, math.MaxInt} {
						checkRejects(t, f, e, tlv.Header{Type: typ, KeepAlive: ka, Length: length},
							fmt.Sprintf("body length %d out of range for the %d-byte length field (max %d)", length, f.LengthWidth, limit))
					}
				}
				for _, typ := range []uint16{et + 1, f.KeepAliveBit() | 1, math.MaxUint16} {
					checkRejects(t, f, e, tlv.Header{Type: typ, KeepAlive: ka, Length: 1},
						fmt.Sprintf("message type %#x exceeds the %d-byte type field (max %#x)", typ, f.TypeWidth, et))
				}
			}
		})
	}
}

func TestEncoderInvalid(t *testing.T) {
	for _, f := range []tlv.Format{{}, {TypeWidth: 3, LengthWidth: 4, MaxBody: 1}, {TypeWidth: 1, LengthWidth: 2, MaxBody: 1 << 20}} {
		e, err := f.Encoder()
		if err == nil || err.Error() != f.Validate().Error() || e != (tlv.Encoder{}) {
			t.Errorf("%+v: Encoder() = %+v, %v; want the zero Encoder and %v", f, e, err, f.Validate())
		}
	}
	var zero tlv.Encoder
	if zero.HeaderLen() != 0 {
		t.Errorf("zero Encoder: HeaderLen %d", zero.HeaderLen())
	}
	dst := []byte{1, 2, 3, 4, 5, 6}
	if err := zero.PutHeader(dst, tlv.Header{}); err == nil || errors.Is(err, tlv.ErrHeaderRange) || !bytes.Equal(dst, []byte{1, 2, 3, 4, 5, 6}) {
		t.Errorf("zero Encoder: PutHeader = %v, dst % x; want an error of its own and nothing written", err, dst)
	}
	if got, err := zero.AppendHeader(dst, tlv.Header{}); err == nil || len(got) != len(dst) {
		t.Errorf("zero Encoder: AppendHeader = % x, %v; want dst back and an error", got, err)
	}
}

// TestEncoderShortDst checks that PutHeader panics on a dst shorter than
// the header even when its capacity would take it, and writes nothing.
func TestEncoderShortDst(t *testing.T) {
	for _, f := range testFormats(t) {
		e, _ := f.Encoder()
		hl := e.HeaderLen()
		buf := make([]byte, hl-1, 16)
		mustPanic(t, "PutHeader short dst", func() { _ = e.PutHeader(buf, tlv.Header{Type: 1, KeepAlive: true, Length: 7}) })
		if full := buf[:16]; !bytes.Equal(full, make([]byte, 16)) {
			t.Errorf("%s: PutHeader on a short dst wrote % x", name(f), full)
		}
		mustPanic(t, "PutHeader nil dst", func() { _ = e.PutHeader(nil, tlv.Header{}) })
	}
}

func TestEncoderAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("alloc counting in -short mode")
	}
	for _, f := range testFormats(t) {
		e, _ := f.Encoder()
		dst := make([]byte, 0, 64)
		if a := testing.AllocsPerRun(100, func() {
			if err := e.PutHeader(dst[:e.HeaderLen()], tlv.Header{Type: 5, KeepAlive: true, Length: 9}); err != nil {
				panic(err)
			}
			var err error
			if dst, err = e.AppendHeader(dst[:0], tlv.Header{Type: 6, Length: 3}); err != nil {
				panic(err)
			}
		}); a != 0 {
			t.Errorf("%s: Encoder allocates %v times per run", name(f), a)
		}
	}
}
