package tlv

import "encoding/binary"

// A Decoder decodes the headers of one Format, checked once when the
// Decoder is made, so that a loop over many frames (an event-loop server
// answering the pipelined requests of one read) pays per frame only for the
// header arithmetic: [Format.Decode] checks the Format on every call, then
// decodes as its Decoder does.
//
// A Decoder is a small value that is safe to copy and to use concurrently.
// Get one from [Format.Decoder]; the zero Decoder decodes nothing (it
// always reports that more bytes are needed).
type Decoder struct {
	// Every field is bounded by the Format's rules (a header of at most 6
	// bytes, MaxBody at most math.MaxInt32), which keeps the value at 8
	// bytes.
	hl, typeWidth uint8 // 0 in the zero Decoder
	kb            uint16
	maxBody       uint32
}

// Decoder returns a Decoder for f, or the error of [Format.Validate].
func (f Format) Decoder() (Decoder, error) {
	d, ok := f.decoder()
	if !ok {
		return Decoder{}, f.Validate()
	}
	return d, nil
}

// decoder returns f's Decoder, or ok == false, allocating nothing, if f is
// invalid.
func (f Format) decoder() (d Decoder, ok bool) {
	if !f.valid() {
		return Decoder{}, false
	}
	return Decoder{
		hl:        uint8(f.TypeWidth + f.LengthWidth),
		typeWidth: uint8(f.TypeWidth),
		kb:        f.keepAliveBit(),
		maxBody:   uint32(f.MaxBody),
	}, true
}

// Format returns the Format the Decoder decodes; the zero Format for the
// zero Decoder.
func (d Decoder) Format() Format {
	if d.hl == 0 {
		return Format{}
	}
	return Format{TypeWidth: int(d.typeWidth), LengthWidth: int(d.hl - d.typeWidth), MaxBody: int(d.maxBody)}
}

// HeaderLen returns the Format's header length; 0 for the zero Decoder.
func (d Decoder) HeaderLen() int { return int(d.hl) }

// Decode is [Format.Decode] for the Decoder's Format: the same results for
// the same bytes, without checking the Format again.
func (d Decoder) Decode(b []byte) (h Header, n int, err error) { return d.decode(b, false) }

// DecodeRequest is Decode followed by [Format.CheckRequest], for a server:
// a header carrying the reserved error type yields n == 0 and a
// *[FrameError] with Reason [ReasonErrorTypeFromClient] as soon as the
// header is complete (unless its body is too large, which is reported
// first, as by Decode).
func (d Decoder) DecodeRequest(b []byte) (h Header, n int, err error) { return d.decode(b, true) }

// decode is Decode, and DecodeRequest when request is set: one function, so
// that each of them is one call. It is the package's only parsing of a
// header; Format.Decode calls it too.
func (d Decoder) decode(b []byte, request bool) (h Header, n int, err error) {
	hl := int(d.hl)
	if len(b) < hl || hl == 0 {
		return Header{}, 0, nil
	}
	typ, length := d.fields(b)
	h.Type = typ &^ d.kb
	h.KeepAlive = typ&d.kb != 0
	// maxBody <= math.MaxInt32 (see Format.maxLength), so this also rejects
	// every 4-byte length above math.MaxInt32, and the conversion to int
	// below cannot overflow, even on 32-bit platforms.
	if length > d.maxBody {
		return h, 0, bodyTooLarge(length, d.maxBody)
	}
	h.Length = int(length)
	if request && h.Type == d.kb-1 {
		return h, 0, errorTypeFromClient(h.Type)
	}
	return h, hl + h.Length, nil
}

// fields reads the raw type and length fields of a whole header at the
// start of b.
func (d Decoder) fields(b []byte) (typ uint16, length uint32) {
	typ = uint16(b[0])
	if d.typeWidth == 2 {
		typ = typ<<8 | uint16(b[1])
	}
	if l := b[d.typeWidth:d.hl]; len(l) == 4 {
		length = binary.BigEndian.Uint32(l)
	} else {
		length = uint32(binary.BigEndian.Uint16(l))
	}
	return typ, length
}

// bodyTooLarge and errorTypeFromClient build the errors out of line, which
// keeps the decoding itself short.
//
//go:noinline
func bodyTooLarge(length, maxBody uint32) error {
	return &FrameError{Reason: ReasonBodyTooLarge, Value: int64(length), Limit: int64(maxBody)}
}

//go:noinline
func errorTypeFromClient(typ uint16) error {
	return &FrameError{Reason: ReasonErrorTypeFromClient, Value: int64(typ)}
}
