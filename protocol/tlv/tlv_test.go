package tlv_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidegate/tidegate/protocol/tlv"
)

// maxInt32Body is the largest MaxBody a 4-byte length field allows with a
// header of hl bytes on this platform (math.MaxInt32 on 64-bit platforms).
func maxInt32Body(hl int) int { return min(math.MaxInt32, math.MaxInt-hl) }

// testFormats covers every width combination, with MaxBody both at and
// below the limit of the length field.
func testFormats(t testing.TB) []tlv.Format {
	t.Helper()
	specs := [][3]int{
		{1, 2, math.MaxUint16},
		{1, 2, 1000},
		{2, 2, math.MaxUint16},
		{2, 2, 300},
		{1, 4, 1 << 20},
		{1, 4, 70000},
		{1, 4, maxInt32Body(5)},
		{2, 4, 1 << 20},
		{2, 4, maxInt32Body(6)},
	}
	var fs []tlv.Format
	for _, s := range specs {
		f, err := tlv.NewFormat(s[0], s[1], s[2])
		if err != nil {
			t.Fatalf("NewFormat(%d, %d, %d): %v", s[0], s[1], s[2], err)
		}
		fs = append(fs, f)
	}
	return fs
}

func name(f tlv.Format) string {
	return fmt.Sprintf("type%d_len%d_max%d", f.TypeWidth, f.LengthWidth, f.MaxBody)
}

// fieldMax is the largest value the length field of f can hold.
func fieldMax(f tlv.Format) uint64 {
	return 1<<(8*f.LengthWidth) - 1
}

// rawHeader builds a header by hand, independently of the package.
func rawHeader(f tlv.Format, rawType uint16, length uint64) []byte {
	var b []byte
	if f.TypeWidth == 2 {
		b = append(b, byte(rawType>>8))
	}
	b = append(b, byte(rawType))
	for i := f.LengthWidth - 1; i >= 0; i-- {
		b = append(b, byte(length>>(8*i)))
	}
	return b
}

func TestFormatConstants(t *testing.T) {
	tests := []struct {
		tw, lw           int
		headerLen        int
		errType, kaBit   uint16
		largestMaxBodyOK int
	}{
		{1, 2, 3, 0x7F, 0x80, math.MaxUint16},
		{2, 2, 4, 0x7FFF, 0x8000, math.MaxUint16},
		{1, 4, 5, 0x7F, 0x80, maxInt32Body(5)},
		{2, 4, 6, 0x7FFF, 0x8000, maxInt32Body(6)},
	}
	for _, tt := range tests {
		f, err := tlv.NewFormat(tt.tw, tt.lw, tt.largestMaxBodyOK)
		if err != nil {
			t.Fatalf("NewFormat(%d, %d, %d): %v", tt.tw, tt.lw, tt.largestMaxBodyOK, err)
		}
		if got := f.HeaderLen(); got != tt.headerLen {
			t.Errorf("%s: HeaderLen = %d, want %d", name(f), got, tt.headerLen)
		}
		if got := f.ErrorType(); got != tt.errType {
			t.Errorf("%s: ErrorType = %#x, want %#x", name(f), got, tt.errType)
		}
		if got := f.KeepAliveBit(); got != tt.kaBit {
			t.Errorf("%s: KeepAliveBit = %#x, want %#x", name(f), got, tt.kaBit)
		}
	}
	want := tlv.Format{TypeWidth: 1, LengthWidth: 4, MaxBody: 1 << 20}
	if tlv.DefaultFormat != want {
		t.Errorf("DefaultFormat = %+v, want %+v", tlv.DefaultFormat, want)
	}
	if err := tlv.DefaultFormat.Validate(); err != nil {
		t.Errorf("DefaultFormat.Validate: %v", err)
	}
}

func TestNewFormat(t *testing.T) {
	tests := []struct {
		tw, lw  int
		maxBody int64 // int64 so that the table compiles on 32-bit platforms
		wantErr string
	}{
		{1, 4, 1 << 20, ""},
		{2, 2, 1, ""},
		{1, 2, math.MaxUint16, ""},
		{2, 4, math.MaxInt32, ""}, // skipped on 32-bit platforms
		{0, 4, 1 << 20, "type width 0"},
		{3, 4, 1 << 20, "type width 3"},
		{-1, 4, 1 << 20, "type width -1"},
		{4, 4, 1 << 20, "type width 4"},
		{1, 0, 1 << 20, "length width 0"},
		{1, 1, 1 << 20, "length width 1"},
		{1, 3, 1 << 20, "length width 3"},
		{2, 8, 1 << 20, "length width 8"},
		{1, 4, 0, "max body 0"},
		{1, 4, -1, "max body -1"},
		{2, 2, math.MinInt32, "max body -2147483648"},
		{1, 2, math.MaxUint16 + 1, "max body 65536"},
		{2, 2, 1 << 20, "max body 1048576"},
		{1, 4, math.MaxInt32 + 1, "max body 2147483648"},
		{2, 4, math.MaxUint32, "max body 4294967295"},
		{1, 4, math.MaxInt64, "max body 9223372036854775807"},
	}
	for _, tt := range tests {
		mb := int(tt.maxBody)
		if int64(mb) != tt.maxBody {
			continue // does not fit an int on this platform
		}
		if tt.wantErr == "" && tt.lw == 4 && mb > maxInt32Body(tt.tw+tt.lw) {
			continue // 32-bit platform: limit lowered by the header length
		}
		f, err := tlv.NewFormat(tt.tw, tt.lw, mb)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("NewFormat(%d, %d, %d): unexpected error %v", tt.tw, tt.lw, mb, err)
				continue
			}
			want := tlv.Format{TypeWidth: tt.tw, LengthWidth: tt.lw, MaxBody: mb}
			if f != want {
				t.Errorf("NewFormat(%d, %d, %d) = %+v, want %+v", tt.tw, tt.lw, mb, f, want)
			}
			continue
		}
		if err == nil {
			t.Errorf("NewFormat(%d, %d, %d) = %+v, want error containing %q", tt.tw, tt.lw, mb, f, tt.wantErr)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "tlv: ") {
			t.Errorf("NewFormat(%d, %d, %d) error = %q, want it to contain %q", tt.tw, tt.lw, mb, err, tt.wantErr)
		}
		if f != (tlv.Format{}) {
			t.Errorf("NewFormat(%d, %d, %d) returned non-zero Format %+v with error", tt.tw, tt.lw, mb, f)
		}
		// Validate agrees with NewFormat.
		lit := tlv.Format{TypeWidth: tt.tw, LengthWidth: tt.lw, MaxBody: mb}
		if verr := lit.Validate(); verr == nil || verr.Error() != err.Error() {
			t.Errorf("Validate() = %v, NewFormat error = %v", verr, err)
		}
	}
}

func TestInvalidFormat(t *testing.T) {
	for _, f := range []tlv.Format{
		{},
		{TypeWidth: 1, LengthWidth: 4},
		{TypeWidth: 3, LengthWidth: 4, MaxBody: 10},
		{TypeWidth: 1, LengthWidth: 2, MaxBody: 1 << 20},
	} {
		if f.HeaderLen() != 0 || f.ErrorType() != 0 || f.KeepAliveBit() != 0 {
			t.Errorf("%+v: HeaderLen, ErrorType, KeepAliveBit = %d, %#x, %#x, want zeros",
				f, f.HeaderLen(), f.ErrorType(), f.KeepAliveBit())
		}
		if f.Validate() == nil {
			t.Errorf("%+v: Validate() = nil", f)
		}
		h, n, err := f.Decode(make([]byte, 16))
		if err == nil || n != 0 || h != (tlv.Header{}) {
			t.Errorf("%+v: Decode = %+v, %d, %v; want error", f, h, n, err)
		}
		if err := f.CheckRequest(tlv.Header{}); err != nil {
			t.Errorf("%+v: CheckRequest = %v", f, err)
		}
		mustPanic(t, "PutHeader", func() { f.PutHeader(make([]byte, 16), tlv.Header{}) })
		mustPanic(t, "AppendHeader", func() { f.AppendHeader(nil, tlv.Header{}) })
		mustPanic(t, "AppendFrame", func() { f.AppendFrame(nil, tlv.Header{}, nil) })
		mustPanic(t, "AppendError", func() { f.AppendError(nil, "x") })
	}
}

func mustPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	fn()
}

func TestGoldenBytes(t *testing.T) {
	f12 := tlv.Format{TypeWidth: 1, LengthWidth: 2, MaxBody: 1000}
	f22 := tlv.Format{TypeWidth: 2, LengthWidth: 2, MaxBody: 1000}
	f24 := tlv.Format{TypeWidth: 2, LengthWidth: 4, MaxBody: 1 << 20}
	tests := []struct {
		f    tlv.Format
		h    tlv.Header
		want []byte
	}{
		{tlv.DefaultFormat, tlv.Header{Type: 3, Length: 258}, []byte{0x03, 0, 0, 0x01, 0x02}},
		{tlv.DefaultFormat, tlv.Header{Type: 3, KeepAlive: true, Length: 258}, []byte{0x83, 0, 0, 0x01, 0x02}},
		{tlv.DefaultFormat, tlv.Header{Type: 0x7F, Length: 1 << 20}, []byte{0x7F, 0, 0x10, 0, 0}},
		{f12, tlv.Header{Type: 0x7F, KeepAlive: true, Length: 1000}, []byte{0xFF, 0x03, 0xE8}},
		{f22, tlv.Header{Type: 0x1234, KeepAlive: true, Length: 0}, []byte{0x92, 0x34, 0, 0}},
		{f24, tlv.Header{Type: 0x7FFF, Length: 0x0A0B0C}, []byte{0x7F, 0xFF, 0, 0x0A, 0x0B, 0x0C}},
	}
	for _, tt := range tests {
		got := tt.f.AppendHeader(nil, tt.h)
		if !bytes.Equal(got, tt.want) {
			t.Errorf("%s: AppendHeader(%+v) = % x, want % x", name(tt.f), tt.h, got, tt.want)
		}
		h, n, err := tt.f.Decode(tt.want)
		if err != nil || h != tt.h || n != len(tt.want)+tt.h.Length {
			t.Errorf("%s: Decode(% x) = %+v, %d, %v; want %+v, %d, nil",
				name(tt.f), tt.want, h, n, err, tt.h, len(tt.want)+tt.h.Length)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, f := range testFormats(t) {
		t.Run(name(f), func(t *testing.T) {
			hl := f.HeaderLen()
			et := f.ErrorType()
			for _, typ := range []uint16{0, 1, 0x55, et - 1, et} {
				for _, ka := range []bool{false, true} {
					for _, length := range []int{0, 1, 255, 256, f.MaxBody - 1, f.MaxBody} {
						h := tlv.Header{Type: typ, KeepAlive: ka, Length: length}

						// PutHeader into a larger buffer leaves the rest untouched.
						put := bytes.Repeat([]byte{0xEE}, hl+3)
						f.PutHeader(put, h)
						if !bytes.Equal(put[hl:], []byte{0xEE, 0xEE, 0xEE}) {
							t.Fatalf("PutHeader(%+v) wrote past the header: % x", h, put)
						}
						// Compare with an independent encoding.
						raw := typ
						if ka {
							raw |= f.KeepAliveBit()
						}
						if want := rawHeader(f, raw, uint64(length)); !bytes.Equal(put[:hl], want) {
							t.Fatalf("PutHeader(%+v) = % x, want % x", h, put[:hl], want)
						}
						// AppendHeader appends the same bytes after a prefix.
						app := f.AppendHeader([]byte("pre"), h)
						if string(app[:3]) != "pre" || !bytes.Equal(app[3:], put[:hl]) {
							t.Fatalf("AppendHeader(%+v) = % x, want prefix + % x", h, app, put[:hl])
						}
						got, n, err := f.Decode(put)
						if err != nil {
							t.Fatalf("Decode(% x): %v", put, err)
						}
						if got != h || n != hl+length {
							t.Fatalf("Decode(% x) = %+v, %d; want %+v, %d", put, got, n, h, hl+length)
						}
					}
				}
			}
		})
	}
}

func TestKeepAliveBit(t *testing.T) {
	for _, f := range testFormats(t) {
		kb := f.KeepAliveBit()
		for _, raw := range []uint16{0, 1, kb - 1, kb, kb | 1, kb | (kb - 1)} {
			h, n, err := f.Decode(rawHeader(f, raw, 7))
			if err != nil || n != f.HeaderLen()+7 {
				t.Fatalf("%s: Decode(raw type %#x) = %d, %v", name(f), raw, n, err)
			}
			if h.KeepAlive != (raw&kb != 0) || h.Type != raw&^kb {
				t.Errorf("%s: raw type %#x decoded as %+v", name(f), raw, h)
			}
		}
		// The keep-alive bit is not part of the message type.
		mustPanic(t, "PutHeader with Type = KeepAliveBit", func() {
			f.PutHeader(make([]byte, 8), tlv.Header{Type: kb})
		})
	}
}

func TestErrorType(t *testing.T) {
	for _, f := range testFormats(t) {
		t.Run(name(f), func(t *testing.T) {
			et := f.ErrorType()
			b := f.AppendError([]byte("x"), "unknown type 42")
			h, n, err := f.Decode(b[1:])
			if err != nil {
				t.Fatalf("Decode(error frame): %v", err)
			}
			want := tlv.Header{Type: et, Length: len("unknown type 42")}
			if h != want || n != len(b)-1 {
				t.Fatalf("error frame decoded as %+v, %d; want %+v, %d", h, n, want, len(b)-1)
			}
			if body := string(b[1+f.HeaderLen() : 1+n]); body != "unknown type 42" {
				t.Fatalf("error frame body = %q", body)
			}

			// A client must not send the error type, with or without keep-alive.
			for _, ka := range []bool{false, true} {
				err := f.CheckRequest(tlv.Header{Type: et, KeepAlive: ka, Length: 3})
				var fe *tlv.FrameError
				if !errors.As(err, &fe) {
					t.Fatalf("CheckRequest(error type, ka=%v) = %v, want *FrameError", ka, err)
				}
				if fe.Reason != tlv.ReasonErrorTypeFromClient || fe.Value != int64(et) {
					t.Errorf("CheckRequest(error type) = %+v", fe)
				}
				if fe.Reason.String() != "error_type_from_client" {
					t.Errorf("Reason.String() = %q", fe.Reason.String())
				}
				wantMsg := fmt.Sprintf("tlv: client sent frame with reserved error type %#x", et)
				if fe.Error() != wantMsg {
					t.Errorf("Error() = %q, want %q", fe.Error(), wantMsg)
				}
			}
			for _, typ := range []uint16{0, 1, et - 1} {
				if err := f.CheckRequest(tlv.Header{Type: typ, Length: f.MaxBody}); err != nil {
					t.Errorf("CheckRequest(type %#x) = %v, want nil", typ, err)
				}
			}
		})
	}
}

func TestAppendErrorTruncates(t *testing.T) {
	f := tlv.Format{TypeWidth: 1, LengthWidth: 2, MaxBody: 10}
	tests := []struct{ reason, want string }{
		{"", ""},
		{"0123456789", "0123456789"},
		{"0123456789ABC", "0123456789"},
		{"012345678é", "012345678"},                              // 'é' is 2 bytes and straddles the limit
		{"0123456€xyz", "0123456€"},                              // '€' is 3 bytes and ends at the limit
		{"01234567€", "01234567"},                                // '€' straddles the limit
		{"012345678\U0001F600", "012345678"},                     // 4-byte rune straddles the limit
		{"0123456\U0001F600", "0123456"},                         // 4-byte rune straddles the limit
		{strings.Repeat("\x80", 20), strings.Repeat("\x80", 10)}, // invalid UTF-8: plain cut
	}
	for _, tt := range tests {
		b := f.AppendError(nil, tt.reason)
		h, n, err := f.Decode(b)
		if err != nil || n != len(b) || h.Type != f.ErrorType() || h.KeepAlive {
			t.Fatalf("AppendError(%q) decoded as %+v, %d, %v", tt.reason, h, n, err)
		}
		got := string(b[f.HeaderLen():])
		if got != tt.want {
			t.Errorf("AppendError(%q) body = %q, want %q", tt.reason, got, tt.want)
		}
		if utf8.ValidString(tt.reason) && !utf8.ValidString(got) {
			t.Errorf("AppendError(%q) body %q is not valid UTF-8", tt.reason, got)
		}
	}
}

func TestMaxBodyBoundary(t *testing.T) {
	for _, f := range testFormats(t) {
		t.Run(name(f), func(t *testing.T) {
			hl := f.HeaderLen()
			h, n, err := f.Decode(rawHeader(f, 1, uint64(f.MaxBody)))
			if err != nil || n != hl+f.MaxBody || h.Length != f.MaxBody {
				t.Fatalf("length == MaxBody: Decode = %+v, %d, %v", h, n, err)
			}
			over := []uint64{fieldMax(f)}
			if uint64(f.MaxBody) < fieldMax(f) {
				over = append(over, uint64(f.MaxBody)+1)
			}
			for _, length := range over {
				if length <= uint64(f.MaxBody) {
					continue
				}
				h, n, err := f.Decode(rawHeader(f, 1|f.KeepAliveBit(), length))
				checkTooLarge(t, f, h, n, err, length)
			}
		})
	}
}

func checkTooLarge(t *testing.T, f tlv.Format, h tlv.Header, n int, err error, length uint64) {
	t.Helper()
	var fe *tlv.FrameError
	if !errors.As(err, &fe) {
		t.Fatalf("length %d > MaxBody %d: Decode error = %v, want *FrameError", length, f.MaxBody, err)
	}
	if n != 0 {
		t.Errorf("length %d: n = %d, want 0", length, n)
	}
	if fe.Reason != tlv.ReasonBodyTooLarge || fe.Value != int64(length) || fe.Limit != int64(f.MaxBody) {
		t.Errorf("length %d: FrameError = %+v", length, *fe)
	}
	if fe.Reason.String() != "body_too_large" {
		t.Errorf("Reason.String() = %q", fe.Reason.String())
	}
	want := fmt.Sprintf("tlv: body length %d exceeds maximum %d", length, f.MaxBody)
	if fe.Error() != want {
		t.Errorf("Error() = %q, want %q", fe.Error(), want)
	}
	// The header is still reported for diagnostics.
	if h.Type != 1 || !h.KeepAlive || h.Length != 0 {
		t.Errorf("header on error = %+v", h)
	}
}

func TestFrameErrorText(t *testing.T) {
	_, _, err := tlv.DefaultFormat.Decode([]byte{0x01, 0x00, 0x4C, 0x4B, 0x40}) // 5000000
	if err == nil || err.Error() != "tlv: body length 5000000 exceeds maximum 1048576" {
		t.Errorf("Decode error = %v", err)
	}
	for _, tt := range []struct {
		r    tlv.Reason
		want string
	}{
		{tlv.ReasonBodyTooLarge, "body_too_large"},
		{tlv.ReasonErrorTypeFromClient, "error_type_from_client"},
		{0, "unknown"},
		{200, "unknown"},
	} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("Reason(%d).String() = %q, want %q", tt.r, got, tt.want)
		}
	}
	fe := &tlv.FrameError{Reason: 200, Value: 7}
	if got, want := fe.Error(), "tlv: invalid frame (reason 200, value 7)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	// errors.As works through wrapping.
	wrapped := fmt.Errorf("conn 12: %w", err)
	var target *tlv.FrameError
	if !errors.As(wrapped, &target) || target.Reason != tlv.ReasonBodyTooLarge {
		t.Errorf("errors.As(wrapped) failed: %v", wrapped)
	}
}

func TestLengthAboveInt32(t *testing.T) {
	for _, tw := range []int{1, 2} {
		hl := tw + 4
		f, err := tlv.NewFormat(tw, 4, maxInt32Body(hl))
		if err != nil {
			t.Fatal(err)
		}
		for _, length := range []uint64{math.MaxInt32 + 1, 0xC0000000, math.MaxUint32} {
			h, n, err := f.Decode(rawHeader(f, 1|f.KeepAliveBit(), length))
			checkTooLarge(t, f, h, n, err, length)
		}
		// The largest accepted length.
		h, n, err := f.Decode(rawHeader(f, 2, uint64(f.MaxBody)))
		if err != nil || h.Length != f.MaxBody || n != hl+f.MaxBody {
			t.Errorf("%s: Decode(MaxBody) = %+v, %d, %v", name(f), h, n, err)
		}
		// The default 1 MiB limit also rejects them, with the same reason.
		d := tlv.Format{TypeWidth: tw, LengthWidth: 4, MaxBody: 1 << 20}
		h, n, err = d.Decode(rawHeader(d, 1|d.KeepAliveBit(), math.MaxUint32))
		checkTooLarge(t, d, h, n, err, math.MaxUint32)
	}
}

func TestPartialHeader(t *testing.T) {
	for _, f := range testFormats(t) {
		hl := f.HeaderLen()
		for _, full := range [][]byte{
			rawHeader(f, f.KeepAliveBit()|3, 5),
			rawHeader(f, f.ErrorType(), fieldMax(f)), // would be an error once complete
			f.AppendFrame(nil, tlv.Header{Type: 9}, []byte("hello")),
		} {
			for i := 0; i < hl; i++ {
				h, n, err := f.Decode(full[:i])
				if h != (tlv.Header{}) || n != 0 || err != nil {
					t.Errorf("%s: Decode(% x) = %+v, %d, %v; want zero, 0, nil",
						name(f), full[:i], h, n, err)
				}
			}
		}
		// A complete header without its body reports the full frame size.
		full := f.AppendFrame(nil, tlv.Header{Type: 9}, []byte("hello"))
		for i := hl; i <= len(full); i++ {
			h, n, err := f.Decode(full[:i])
			if err != nil || n != hl+5 || h != (tlv.Header{Type: 9, Length: 5}) {
				t.Errorf("%s: Decode(%d bytes) = %+v, %d, %v", name(f), i, h, n, err)
			}
		}
	}
}

func TestBackToBack(t *testing.T) {
	for _, f := range testFormats(t) {
		t.Run(name(f), func(t *testing.T) {
			type frame struct {
				h    tlv.Header
				body string
			}
			frames := []frame{
				{tlv.Header{Type: 1}, "a"},
				{tlv.Header{Type: 0, KeepAlive: true}, ""},
				{tlv.Header{Type: f.ErrorType() - 1}, "hello, world"},
				{tlv.Header{Type: 2}, ""},
				{tlv.Header{Type: f.ErrorType(), KeepAlive: true}, strings.Repeat("z", min(f.MaxBody, 300))},
				{tlv.Header{Type: 3, KeepAlive: true}, "last"},
			}
			var stream []byte
			for _, fr := range frames {
				stream = f.AppendFrame(stream, fr.h, []byte(fr.body))
			}
			stream = append(stream, 0x01) // a trailing partial header
			rest := stream
			for i, fr := range frames {
				h, n, err := f.Decode(rest)
				if err != nil || n == 0 || n > len(rest) {
					t.Fatalf("frame %d: Decode = %+v, %d, %v (len %d)", i, h, n, err, len(rest))
				}
				want := fr.h
				want.Length = len(fr.body)
				if h != want {
					t.Fatalf("frame %d: header %+v, want %+v", i, h, want)
				}
				if body := string(rest[f.HeaderLen():n]); body != fr.body {
					t.Fatalf("frame %d: body %q, want %q", i, body, fr.body)
				}
				rest = rest[n:]
			}
			if h, n, err := f.Decode(rest); n != 0 || err != nil || len(rest) != 1 {
				t.Fatalf("trailing bytes: Decode = %+v, %d, %v (len %d)", h, n, err, len(rest))
			}
		})
	}
}

func TestAppendFrameIgnoresLength(t *testing.T) {
	f := tlv.DefaultFormat
	b := f.AppendFrame(nil, tlv.Header{Type: 4, Length: 999}, []byte("abc"))
	h, n, err := f.Decode(b)
	if err != nil || n != len(b) || h != (tlv.Header{Type: 4, Length: 3}) {
		t.Errorf("Decode(AppendFrame) = %+v, %d, %v", h, n, err)
	}
}

func TestEncodePanics(t *testing.T) {
	for _, f := range testFormats(t) {
		hl := f.HeaderLen()
		mustPanic(t, "PutHeader short dst", func() { f.PutHeader(make([]byte, hl-1), tlv.Header{}) })
		mustPanic(t, "PutHeader nil dst", func() { f.PutHeader(nil, tlv.Header{}) })
		mustPanic(t, "PutHeader type too large", func() {
			f.PutHeader(make([]byte, hl), tlv.Header{Type: f.ErrorType() + 1})
		})
		mustPanic(t, "PutHeader type 0xFFFF", func() { f.PutHeader(make([]byte, hl), tlv.Header{Type: 0xFFFF}) })
		mustPanic(t, "PutHeader negative length", func() { f.PutHeader(make([]byte, hl), tlv.Header{Length: -1}) })
		mustPanic(t, "AppendHeader negative length", func() { f.AppendHeader(nil, tlv.Header{Length: -1}) })
		mustPanic(t, "AppendFrame type too large", func() {
			f.AppendFrame(nil, tlv.Header{Type: f.ErrorType() + 1}, nil)
		})
		if f.LengthWidth == 2 {
			mustPanic(t, "AppendHeader length 65536", func() {
				f.AppendHeader(nil, tlv.Header{Length: math.MaxUint16 + 1})
			})
			mustPanic(t, "AppendFrame body 65536", func() {
				f.AppendFrame(nil, tlv.Header{}, make([]byte, math.MaxUint16+1))
			})
		}
	}
	// MaxBody is a receive limit: encoding a representable but larger
	// length is allowed (and Decode with the same Format rejects it).
	f := tlv.Format{TypeWidth: 1, LengthWidth: 2, MaxBody: 10}
	b := f.AppendFrame(nil, tlv.Header{Type: 1}, make([]byte, 11))
	if _, _, err := f.Decode(b); err == nil {
		t.Errorf("Decode accepted a body above MaxBody")
	}
}

func TestDecodeAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("alloc counting in -short mode")
	}
	for _, f := range testFormats(t) {
		frame := f.AppendFrame(nil, tlv.Header{Type: 5, KeepAlive: true}, []byte("payload"))
		partial := frame[:f.HeaderLen()-1]
		var sink int
		if a := testing.AllocsPerRun(100, func() {
			_, n, err := f.Decode(frame)
			if err != nil {
				panic(err)
			}
			sink += n
		}); a != 0 {
			t.Errorf("%s: Decode (success) allocates %v times per run", name(f), a)
		}
		if a := testing.AllocsPerRun(100, func() {
			_, n, err := f.Decode(partial)
			if err != nil {
				panic(err)
			}
			sink += n
		}); a != 0 {
			t.Errorf("%s: Decode (need more) allocates %v times per run", name(f), a)
		}
		dst := make([]byte, 0, 64)
		body := []byte("payload")
		if a := testing.AllocsPerRun(100, func() {
			dst = f.AppendFrame(dst[:0], tlv.Header{Type: 5}, body)
			dst = f.AppendError(dst, "bad request")
			f.PutHeader(dst, tlv.Header{Type: 1, Length: 2})
		}); a != 0 {
			t.Errorf("%s: AppendFrame/AppendError/PutHeader allocate %v times per run", name(f), a)
		}
		_ = sink
	}
}

// TestRandomSplitStream encodes many random frames, cuts the stream at
// random points and reassembles it the way a network server does: append
// each chunk to an inbound buffer, then consume every whole frame.
func TestRandomSplitStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(20240601, 7))
	for _, f := range testFormats(t) {
		t.Run(name(f), func(t *testing.T) {
			type frame struct {
				h    tlv.Header
				body []byte
			}
			const numFrames = 2000
			maxLen := min(f.MaxBody, 600)
			frames := make([]frame, numFrames)
			var stream []byte
			for i := range frames {
				var n int
				switch rng.IntN(10) {
				case 0:
					n = 0
				case 1:
					n = maxLen
				default:
					n = rng.IntN(maxLen + 1)
				}
				body := make([]byte, n)
				for j := range body {
					body[j] = byte(rng.Uint32())
				}
				h := tlv.Header{
					Type:      uint16(rng.UintN(uint(f.ErrorType()) + 1)),
					KeepAlive: rng.IntN(2) == 0,
					Length:    n,
				}
				frames[i] = frame{h, body}
				stream = f.AppendFrame(stream, h, body)
			}

			var (
				inbound []byte // bytes received but not yet consumed
				next    int    // index of the next expected frame
				chunks  int
			)
			for off := 0; off < len(stream); chunks++ {
				var size int
				switch rng.IntN(4) {
				case 0:
					size = 1 + rng.IntN(f.HeaderLen()+1) // tiny, splits headers
				case 1:
					size = 1 + rng.IntN(4096) // spans many frames
				default:
					size = 1 + rng.IntN(2*maxLen+1)
				}
				size = min(size, len(stream)-off)
				inbound = append(inbound, stream[off:off+size]...)
				off += size

				consumed := 0
				for {
					h, n, err := f.Decode(inbound[consumed:])
					if err != nil {
						t.Fatalf("frame %d: Decode: %v", next, err)
					}
					if n == 0 || n > len(inbound)-consumed {
						break // need more bytes
					}
					if next >= len(frames) {
						t.Fatalf("decoded more than %d frames", len(frames))
					}
					want := frames[next]
					if h != want.h {
						t.Fatalf("frame %d: header %+v, want %+v", next, h, want.h)
					}
					body := inbound[consumed+f.HeaderLen() : consumed+n]
					if !bytes.Equal(body, want.body) {
						t.Fatalf("frame %d: body mismatch", next)
					}
					consumed += n
					next++
				}
				inbound = append(inbound[:0], inbound[consumed:]...)
			}
			if next != len(frames) || len(inbound) != 0 {
				t.Fatalf("decoded %d of %d frames, %d bytes left over", next, len(frames), len(inbound))
			}
			t.Logf("%d frames, %d bytes, %d chunks", len(frames), len(stream), chunks)
		})
	}
}
