package tlv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// ErrHeaderRange is wrapped by the error an [Encoder] returns for a header
// its Format cannot carry: a message type above the Format's ErrorType, or
// a negative body length or one larger than the length field holds.
var ErrHeaderRange = errors.New("tlv: header field out of range")

// errZeroEncoder is what the zero Encoder returns.
var errZeroEncoder = errors.New("tlv: zero Encoder (use Format.Encoder)")

// An Encoder encodes the headers of one Format, checked once when the
// Encoder is made: the counterpart of [Decoder], for a loop that writes
// many frames (a server's responses to the pipelined requests of one read,
// a load generator's requests). [Format.PutHeader] and its kin check the
// Format on every call, then encode as its Encoder does, and panic where
// an Encoder returns an error.
//
// An Encoder is a small value that is safe to copy and to use concurrently.
// Get one from [Format.Encoder]; the zero Encoder encodes nothing (its
// methods return an error).
type Encoder struct {
	hl, typeWidth uint8  // 0 in the zero Encoder
	kb            uint16 // the keep-alive bit; 0 in the zero Encoder
	maxLength     uint32 // Format.maxLength
}

// Encoder returns an Encoder for f, or the error of [Format.Validate].
func (f Format) Encoder() (Encoder, error) {
	e, ok := f.encoder()
	if !ok {
		return Encoder{}, f.Validate()
	}
	return e, nil
}

// encoder returns f's Encoder, or ok == false, allocating nothing, if f is
// invalid.
func (f Format) encoder() (e Encoder, ok bool) {
	if !f.valid() {
		return Encoder{}, false
	}
	return Encoder{hl: uint8(f.TypeWidth + f.LengthWidth), typeWidth: uint8(f.TypeWidth), kb: f.keepAliveBit(), maxLength: uint32(f.maxLength())}, true
}

// HeaderLen returns the Format's header length; 0 for the zero Encoder.
func (e Encoder) HeaderLen() int { return int(e.hl) }

// PutHeader encodes h into the first HeaderLen bytes of dst. Like the
// methods of binary.BigEndian, it panics if dst is shorter than HeaderLen.
//
// If h.Type does not fit the type field (h.Type is above the Format's
// ErrorType) or h.Length is negative or larger than the length field
// carries, PutHeader writes nothing and returns an error wrapping
// [ErrHeaderRange] that names the value. It does not enforce MaxBody,
// which is the limit the receiving side applies in Decode.
func (e Encoder) PutHeader(dst []byte, h Header) error {
	if !e.fits(h) {
		return e.rangeError(h)
	}
	_ = dst[e.hl-1] // panics here, not past a slice's length, if dst is short
	e.put(dst, h)
	return nil
}

// AppendHeader appends the encoding of h to dst and returns the extended
// slice. On an error, as PutHeader's, it returns dst unchanged.
func (e Encoder) AppendHeader(dst []byte, h Header) ([]byte, error) {
	if !e.fits(h) {
		return dst, e.rangeError(h)
	}
	n := len(dst)
	dst = slices.Grow(dst, int(e.hl))[:n+int(e.hl)]
	e.put(dst[n:], h)
	return dst, nil
}

// fits reports whether h can be encoded. The zero Encoder's kb of 0 fails
// every type.
func (e Encoder) fits(h Header) bool {
	return h.Type < e.kb && uint(h.Length) <= uint(e.maxLength)
}

// put writes h, checked, into the first HeaderLen bytes of dst, which has
// them: the package's only layout of a header.
func (e Encoder) put(dst []byte, h Header) {
	typ := h.Type
	if h.KeepAlive {
		typ |= e.kb
	}
	if e.typeWidth == 2 {
		binary.BigEndian.PutUint16(dst, typ)
	} else {
		dst[0] = byte(typ)
	}
	if l := dst[e.typeWidth:e.hl]; len(l) == 4 {
		binary.BigEndian.PutUint32(l, uint32(h.Length))
	} else {
		binary.BigEndian.PutUint16(l, uint16(h.Length))
	}
}

// rangeError returns the error for a header that does not fit. It is built
// out of line, which keeps the encoding itself short.
//
//go:noinline
func (e Encoder) rangeError(h Header) error {
	if e.hl == 0 {
		return errZeroEncoder
	}
	if h.Type >= e.kb {
		return fmt.Errorf("%w: message type %#x exceeds the %d-byte type field (max %#x)",
			ErrHeaderRange, h.Type, e.typeWidth, e.kb-1)
	}
	return fmt.Errorf("%w: body length %d out of range for the %d-byte length field (max %d)",
		ErrHeaderRange, h.Length, e.hl-e.typeWidth, e.maxLength)
}
