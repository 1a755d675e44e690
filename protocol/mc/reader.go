package mc

import "encoding/binary"

// Reader decodes protocol fields from a packet body without copying or
// allocating on success: byte slices it returns alias the input. The zero
// Reader reads from an empty body.
type Reader struct {
	buf []byte
}

// NewReader returns a Reader over b.
func NewReader(b []byte) Reader {
	return Reader{buf: b}
}

// Remaining returns the number of unread bytes.
func (r *Reader) Remaining() int {
	return len(r.buf)
}

// Rest returns the unread bytes without consuming them.
func (r *Reader) Rest() []byte {
	return r.buf
}

// ReadVarInt reads a VarInt.
func (r *Reader) ReadVarInt() (int32, error) {
	v, n, err := ReadVarInt(r.buf)
	if err != nil {
		return 0, newError(ReasonVarIntTooLong, kindTooLong, "varint", 0, MaxVarIntLen)
	}
	if n == 0 {
		return 0, newError(ReasonTruncated, kindTruncated, "varint", int64(len(r.buf)), int64(len(r.buf)+1))
	}
	r.buf = r.buf[n:]
	return v, nil
}

// ReadString reads a VarInt byte length and that many bytes, which are
// returned without copying or UTF-8 validation. maxLen bounds the length in
// bytes, not characters.
func (r *Reader) ReadString(maxLen int) ([]byte, error) {
	n, err := r.ReadVarInt()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, newError(ReasonNegativeLength, kindTooSmall, "string length", int64(n), 0)
	}
	if int(n) > maxLen {
		return nil, newError(ReasonStringTooLong, kindTooLarge, "string length", int64(n), int64(maxLen))
	}
	if int(n) > len(r.buf) {
		return nil, newError(ReasonTruncated, kindTruncated, "string", int64(len(r.buf)), int64(n))
	}
	s := r.buf[:n:n]
	r.buf = r.buf[n:]
	return s, nil
}

// ReadBytes reads exactly n bytes, returned without copying.
func (r *Reader) ReadBytes(n int) ([]byte, error) {
	if n < 0 {
		return nil, newError(ReasonNegativeLength, kindTooSmall, "byte count", int64(n), 0)
	}
	if n > len(r.buf) {
		return nil, newError(ReasonTruncated, kindTruncated, "bytes", int64(len(r.buf)), int64(n))
	}
	b := r.buf[:n:n]
	r.buf = r.buf[n:]
	return b, nil
}

// ReadUint16 reads a big-endian unsigned short.
func (r *Reader) ReadUint16() (uint16, error) {
	if len(r.buf) < 2 {
		return 0, newError(ReasonTruncated, kindTruncated, "unsigned short", int64(len(r.buf)), 2)
	}
	v := binary.BigEndian.Uint16(r.buf)
	r.buf = r.buf[2:]
	return v, nil
}

// ReadInt64 reads a big-endian long.
func (r *Reader) ReadInt64() (int64, error) {
	if len(r.buf) < 8 {
		return 0, newError(ReasonTruncated, kindTruncated, "long", int64(len(r.buf)), 8)
	}
	v := int64(binary.BigEndian.Uint64(r.buf))
	r.buf = r.buf[8:]
	return v, nil
}
