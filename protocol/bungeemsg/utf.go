package bungeemsg

import (
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxUTF is the most bytes a writeUTF string can have: its length prefix
// is an unsigned 16-bit integer.
const MaxUTF = 0xffff

// decodeModified converts modified UTF-8 (Java's DataInput.readUTF: U+0000
// as two bytes, characters past U+FFFF as two three-byte surrogates) to
// UTF-8. A surrogate that is not half of a pair becomes U+FFFD; a byte that
// starts no sequence of one to three bytes, or a sequence cut short, is an
// error. The result is never longer than b.
func decodeModified(b []byte) (string, error) {
	i := 0
	for i < len(b) && b[i] < 0x80 {
		i++
	}
	if i == len(b) {
		return string(b), nil
	}
	out := make([]byte, i, len(b))
	copy(out, b[:i])
	high := rune(-1) // a high surrogate waiting for its low half
	for i < len(b) {
		c := b[i]
		var u rune
		switch {
		case c < 0x80:
			u, i = rune(c), i+1
		case c&0xe0 == 0xc0:
			if i+1 >= len(b) || b[i+1]&0xc0 != 0x80 {
				return "", errorf(ErrBadUTF, "two-byte sequence at offset %d cut short or not continued: % x", i, b[i:min(i+2, len(b))])
			}
			u, i = rune(c&0x1f)<<6|rune(b[i+1]&0x3f), i+2
		case c&0xf0 == 0xe0:
			if i+2 >= len(b) || b[i+1]&0xc0 != 0x80 || b[i+2]&0xc0 != 0x80 {
				return "", errorf(ErrBadUTF, "three-byte sequence at offset %d cut short or not continued: % x", i, b[i:min(i+3, len(b))])
			}
			u, i = rune(c&0x0f)<<12|rune(b[i+1]&0x3f)<<6|rune(b[i+2]&0x3f), i+3
		default:
			return "", errorf(ErrBadUTF, "byte 0x%02x at offset %d starts no modified UTF-8 sequence", c, i)
		}
		if high >= 0 {
			if utf16.IsSurrogate(u) && u >= 0xdc00 {
				out = utf8.AppendRune(out, utf16.DecodeRune(high, u))
				high = -1
				continue
			}
			out = utf8.AppendRune(out, utf8.RuneError)
			high = -1
		}
		if utf16.IsSurrogate(u) && u < 0xdc00 {
			high = u
			continue
		}
		out = utf8.AppendRune(out, u) // a lone low surrogate is not valid: AppendRune writes U+FFFD
	}
	if high >= 0 {
		out = utf8.AppendRune(out, utf8.RuneError)
	}
	return string(out), nil
}

// modifiedLen returns how many bytes s takes in modified UTF-8; bytes of s
// that are not UTF-8 count as U+FFFD.
func modifiedLen(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r == 0:
			n += 2
		case r < 0x80:
			n++
		case r < 0x800:
			n += 2
		case r < 0x10000:
			n += 3
		default:
			n += 6
		}
	}
	return n
}

// AppendUTF appends s as Java's DataOutput.writeUTF writes it: a 2-byte
// big-endian length, then s in modified UTF-8 (bytes of s that are not
// UTF-8 are written as U+FFFD). It fails, appending nothing, when that is
// over MaxUTF bytes.
func AppendUTF(dst []byte, s string) ([]byte, error) {
	out, err := appendUTF(dst, s)
	return out, public(err)
}

func appendUTF(dst []byte, s string) ([]byte, error) {
	n := modifiedLen(s)
	if n > MaxUTF {
		return dst, errorf(ErrTooLong, "string of %d bytes in modified UTF-8 is over the %d a writeUTF length can say", n, MaxUTF)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	for _, r := range s {
		switch {
		case r == 0:
			dst = append(dst, 0xc0, 0x80)
		case r < 0x80:
			dst = append(dst, byte(r))
		case r < 0x10000:
			dst = utf8.AppendRune(dst, r) // one to three bytes, as in UTF-8
		default:
			r1, r2 := utf16.EncodeRune(r)
			dst = appendSurrogate(appendSurrogate(dst, r1), r2)
		}
	}
	return dst, nil
}

// appendSurrogate appends the three bytes of a surrogate code unit, which
// utf8.AppendRune refuses to write.
func appendSurrogate(dst []byte, u rune) []byte {
	return append(dst, 0xe0|byte(u>>12), 0x80|byte(u>>6)&0x3f, 0x80|byte(u)&0x3f)
}
