// Package tlv implements the framing of the TLV (type, length, value)
// request/response protocol.
//
// Every frame is a header followed by a body. The header is a type field
// and a length field, both big-endian:
//
//	+------------+--------------+----------------------+
//	| type       | length       | body                 |
//	| 1 or 2 B   | 2 or 4 B     | length bytes         |
//	+------------+--------------+----------------------+
//
// The highest bit of the type field is the keep-alive bit; the remaining
// low bits are the message type. The message type with all low bits set
// (0x7F for a 1-byte type, 0x7FFF for a 2-byte type) is reserved for error
// frames, which only a server may send.
//
// A [Format] fixes the field widths and the largest body accepted.
// [Format.Decode] parses a header from bytes received so far without
// copying or allocating, which makes it suitable for event-loop servers
// that inspect an inbound buffer and wait until a whole frame is present;
// a [Decoder] gives the same results with the Format checked once, for a
// loop over the many frames of one read. An [Encoder] is its counterpart
// for writing headers: the Format checked once, and a header it cannot
// carry reported as an error rather than a panic.
package tlv

import (
	"fmt"
	"math"
	"unicode/utf8"
)

// Format describes the header layout; the zero value is invalid, use
// [DefaultFormat] or [NewFormat].
//
// A Format is a small value that is safe to copy and to use concurrently.
// On a Format that does not satisfy [Format.Validate], Decode returns an
// error, the encoding methods panic, and HeaderLen, ErrorType and
// KeepAliveBit return 0.
type Format struct {
	// TypeWidth is the width of the type field in bytes: 1 or 2.
	TypeWidth int

	// LengthWidth is the width of the length field in bytes: 2 or 4.
	LengthWidth int

	// MaxBody is the largest body length Decode accepts. It must be
	// positive and no larger than the length field can express
	// (math.MaxUint16 for a 2-byte length, math.MaxInt32 for a 4-byte
	// length; on 32-bit platforms math.MaxInt32 minus the header length).
	MaxBody int
}

// DefaultFormat is the standard layout: a 1-byte type, a 4-byte length
// (a 5-byte header) and bodies of at most 1 MiB.
var DefaultFormat = Format{TypeWidth: 1, LengthWidth: 4, MaxBody: 1 << 20}

// NewFormat returns a Format with the given type width (1 or 2 bytes),
// length width (2 or 4 bytes) and maximum body length. The error, if any,
// names the offending value.
func NewFormat(typeWidth, lengthWidth, maxBody int) (Format, error) {
	f := Format{TypeWidth: typeWidth, LengthWidth: lengthWidth, MaxBody: maxBody}
	if err := f.Validate(); err != nil {
		return Format{}, err
	}
	return f, nil
}

// Validate reports whether f is a usable Format, returning an error that
// names the first offending field and value. It is useful for a Format
// built as a composite literal, for example from configuration.
func (f Format) Validate() error {
	if f.TypeWidth != 1 && f.TypeWidth != 2 {
		return fmt.Errorf("tlv: invalid type width %d (must be 1 or 2 bytes)", f.TypeWidth)
	}
	if f.LengthWidth != 2 && f.LengthWidth != 4 {
		return fmt.Errorf("tlv: invalid length width %d (must be 2 or 4 bytes)", f.LengthWidth)
	}
	if f.MaxBody <= 0 {
		return fmt.Errorf("tlv: invalid max body %d (must be positive)", f.MaxBody)
	}
	if limit := f.maxLength(); f.MaxBody > limit {
		return fmt.Errorf("tlv: invalid max body %d (a %d-byte length field allows at most %d)",
			f.MaxBody, f.LengthWidth, limit)
	}
	return nil
}

// valid is the allocation-free equivalent of Validate() == nil.
func (f Format) valid() bool {
	return (f.TypeWidth == 1 || f.TypeWidth == 2) &&
		(f.LengthWidth == 2 || f.LengthWidth == 4) &&
		f.MaxBody > 0 && f.MaxBody <= f.maxLength()
}

// maxLength returns the largest body length that the length field can
// carry and that keeps the total frame size representable as an int. The
// widths must be valid.
func (f Format) maxLength() int {
	if f.LengthWidth == 2 {
		return math.MaxUint16
	}
	// Lengths above math.MaxInt32 are never accepted, even on 64-bit
	// platforms: Java peers read the length field as a signed int.
	if intIs32 {
		return math.MaxInt32 - f.TypeWidth - f.LengthWidth
	}
	return math.MaxInt32
}

// intIs32 is whether int has 32 bits, and so math.MaxInt32 plus a header
// does not fit in one: a constant, which keeps maxLength, and the methods
// that call it, cheap enough to inline.
const intIs32 = math.MaxInt == math.MaxInt32

// HeaderLen returns the header length in bytes: TypeWidth + LengthWidth,
// that is 3, 4, 5 or 6. It returns 0 if f is invalid.
func (f Format) HeaderLen() int {
	if !f.valid() {
		return 0
	}
	return f.TypeWidth + f.LengthWidth
}

// ErrorType returns the reserved message type of error frames: 0x7F for a
// 1-byte type field, 0x7FFF for a 2-byte type field. It is also the largest
// message type the format can carry. It returns 0 if f is invalid.
func (f Format) ErrorType() uint16 {
	kb := f.KeepAliveBit()
	if kb == 0 {
		return 0
	}
	return kb - 1
}

// KeepAliveBit returns the keep-alive bit of the raw type field: 0x80 for a
// 1-byte type field, 0x8000 for a 2-byte type field. It returns 0 if f is
// invalid.
func (f Format) KeepAliveBit() uint16 {
	if !f.valid() {
		return 0
	}
	return f.keepAliveBit()
}

// keepAliveBit is KeepAliveBit for a valid f.
func (f Format) keepAliveBit() uint16 {
	if f.TypeWidth == 2 {
		return 0x8000
	}
	return 0x80
}

// Header is a decoded frame header.
type Header struct {
	// Type is the message type, without the keep-alive bit. It is at most
	// the Format's ErrorType.
	Type uint16

	// KeepAlive reports whether the keep-alive bit is set.
	KeepAlive bool

	// Length is the body length in bytes.
	Length int
}

// PutHeader encodes h into the first HeaderLen bytes of dst: it is
// [Encoder.PutHeader] for f, with the Format checked on every call. Like
// the methods of binary.BigEndian, it panics if dst is shorter than
// HeaderLen.
//
// PutHeader also panics if f is invalid, if h.Type does not fit the type
// field (h.Type > ErrorType) or if h.Length is negative or larger than the
// length field can carry. It does not enforce MaxBody, which is the limit
// applied by the receiving side in Decode.
func (f Format) PutHeader(dst []byte, h Header) {
	e, ok := f.encoder()
	if !ok {
		panicInvalid(f)
	}
	if err := e.PutHeader(dst, h); err != nil {
		panic(err.Error())
	}
}

// AppendHeader appends the encoding of h to dst and returns the extended
// slice. It panics in the same cases as PutHeader, except that dst may have
// any length.
func (f Format) AppendHeader(dst []byte, h Header) []byte {
	e, ok := f.encoder()
	if !ok {
		panicInvalid(f)
	}
	dst, err := e.AppendHeader(dst, h)
	if err != nil {
		panic(err.Error())
	}
	return dst
}

// panicInvalid panics for an invalid f, whose headers cannot be written
// without corrupting the stream.
func panicInvalid(f Format) {
	panic(fmt.Sprintf("tlv: invalid Format %+v", f))
}

// Decode inspects the start of b (bytes already received, possibly partial
// or several frames). It returns the header and the total frame size
// (header+body) when a whole header is present; n == 0 with err == nil
// means more bytes are needed (fewer than HeaderLen bytes). It does NOT
// require the body to be present: the caller compares n with len(b), and
// the body is b[HeaderLen():n] once len(b) >= n.
//
// A header announcing a body longer than MaxBody yields n == 0 and a
// *[FrameError] with Reason [ReasonBodyTooLarge]; the returned Header is
// filled in for diagnostics but no size derived from it should be used.
// Decode never allocates based on the announced length, and allocates
// nothing unless it returns an error. It returns an error if f is invalid.
//
// Decode does not reject the reserved error type, which is legitimate in
// frames sent by a server; servers use [Format.CheckRequest] for that.
func (f Format) Decode(b []byte) (h Header, n int, err error) {
	d, ok := f.decoder()
	if !ok {
		return Header{}, 0, f.Validate()
	}
	return d.decode(b, false)
}

// CheckRequest checks a header received by a server from a client. It
// returns a *[FrameError] with Reason [ReasonErrorTypeFromClient] if the
// header carries the reserved error type, which clients must not send, and
// nil otherwise. Bodies longer than MaxBody are already rejected by Decode.
func (f Format) CheckRequest(h Header) error {
	if et := f.ErrorType(); h.Type == et && et != 0 {
		return &FrameError{Reason: ReasonErrorTypeFromClient, Value: int64(h.Type)}
	}
	return nil
}

// AppendFrame appends a whole frame (header+body) to dst and returns the
// extended slice. The length field is len(body); h.Length is ignored. It
// panics in the same cases as PutHeader. It does not allocate if dst has
// enough spare capacity.
func (f Format) AppendFrame(dst []byte, h Header, body []byte) []byte {
	h.Length = len(body)
	dst = f.AppendHeader(dst, h)
	return append(dst, body...)
}

// AppendError appends an error frame (ErrorType, keep-alive false) whose
// body is the reason text, and returns the extended slice. A reason longer
// than MaxBody is truncated at a UTF-8 character boundary so that the peer
// can always decode the frame. It panics if f is invalid.
func (f Format) AppendError(dst []byte, reason string) []byte {
	if !f.valid() {
		panicInvalid(f)
	}
	if len(reason) > f.MaxBody {
		// Cut before the rune that straddles MaxBody: back up at most
		// utf8.UTFMax-1 bytes to a rune start. For invalid UTF-8 with no
		// rune start nearby, cut at MaxBody.
		cut := f.MaxBody
		for i := cut; i > 0 && i > f.MaxBody-utf8.UTFMax; i-- {
			if utf8.RuneStart(reason[i]) {
				cut = i
				break
			}
		}
		reason = reason[:cut]
	}
	dst = f.AppendHeader(dst, Header{Type: f.ErrorType(), Length: len(reason)})
	return append(dst, reason...)
}
