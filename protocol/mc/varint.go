package mc

import "math/bits"

// MaxVarIntLen is the maximum encoded length of a VarInt (an int32).
const MaxVarIntLen = 5

// AppendVarInt appends the VarInt encoding of v to dst and returns the
// extended slice. Negative values take MaxVarIntLen bytes.
func AppendVarInt(dst []byte, v int32) []byte {
	u := uint32(v)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// VarIntLen returns the number of bytes AppendVarInt uses to encode v.
func VarIntLen(v int32) int {
	return (bits.Len32(uint32(v)|1) + 6) / 7
}

// ReadVarInt decodes a VarInt from the start of b and returns it with the
// number of bytes it occupied. It returns n == 0 and a nil error when b ends
// before the VarInt does, and ErrVarIntTooLong when the first MaxVarIntLen
// bytes all have their continuation bit set.
//
// Like the Java implementations, it accepts non-minimal encodings and
// ignores the bits of a fifth byte that do not fit in 32 bits.
func ReadVarInt(b []byte) (v int32, n int, err error) {
	var u uint32
	for i := 0; i < MaxVarIntLen; i++ {
		if i >= len(b) {
			return 0, 0, nil
		}
		c := b[i]
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(u), i + 1, nil
		}
	}
	return 0, 0, ErrVarIntTooLong
}
