package play

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tidegate/tidegate/protocol/mc"
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

// readVarInt is mc.ReadVarInt with a VarInt that the packet cuts short
// reported as ErrTruncated.
func readVarInt(b []byte) (int32, int, error) {
	v, n, err := mc.ReadVarInt(b)
	if err == nil && n == 0 {
		return 0, 0, fmt.Errorf("VarInt: %w", ErrTruncated)
	}
	return v, n, err
}

// appendString appends s with its VarInt length (mc.AppendString).
func appendString(dst []byte, s string) []byte {
	return mc.AppendString(dst, []byte(s))
}
