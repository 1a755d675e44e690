package play

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrTruncated is wrapped by every decoding error of a packet that ends
// too early.
var ErrTruncated = errors.New("the packet ends early")

// maxString is the longest string, in bytes, the decoder takes: an
// identifier or level type is at most 32,767 characters of up to 3 bytes.
const maxString = 3 * 32767

// reader reads a packet's fields in order; the first error sticks.
type reader struct {
	b   []byte
	off int
	err error
}

// fail records the first error, naming the field.
func (r *reader) fail(field string, err error) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at byte %d: %w", field, r.off, err)
	}
}

// bytes returns the next n bytes, or nil once failed.
func (r *reader) bytes(field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail(field, fmt.Errorf("%d bytes wanted, %d left: %w", n, len(r.b)-r.off, ErrTruncated))
		return nil
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

func (r *reader) u8(field string) byte {
	if b := r.bytes(field, 1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) i32(field string) int32 {
	if b := r.bytes(field, 4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) i64(field string) int64 {
	if b := r.bytes(field, 8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) bool(field string) bool {
	switch v := r.u8(field); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.fail(field, fmt.Errorf("boolean byte %#x", v))
		return false
	}
}

// varint reads a VarInt of at most 5 bytes.
func (r *reader) varint(field string) int32 {
	if r.err != nil {
		return 0
	}
	v, n, err := readVarInt(r.b[r.off:])
	if err != nil {
		r.fail(field, err)
		return 0
	}
	r.off += n
	return v
}

// str reads a string (a VarInt byte length, then UTF-8) of at most
// maxString bytes.
func (r *reader) str(field string) []byte {
	n := r.varint(field + " length")
	if r.err == nil && (n < 0 || n > maxString) {
		r.fail(field, fmt.Errorf("string length %d outside 0..%d", n, maxString))
	}
	return r.bytes(field, int(n))
}

// readVarInt decodes a VarInt at the start of b and returns it and its
// length.
func readVarInt(b []byte) (int32, int, error) {
	var v uint32
	for i := 0; i < 5; i++ {
		if i == len(b) {
			return 0, 0, fmt.Errorf("VarInt: %w", ErrTruncated)
		}
		v |= uint32(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return int32(v), i + 1, nil
		}
	}
	return 0, 0, errors.New("VarInt longer than 5 bytes")
}

// appendVarInt appends v as a VarInt.
func appendVarInt(dst []byte, v int32) []byte {
	u := uint32(v)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// appendString appends s with its VarInt length.
func appendString(dst []byte, s string) []byte {
	return append(appendVarInt(dst, int32(len(s))), s...)
}
