package mc

import "crypto/md5"

const offlinePrefix = "OfflinePlayer:"

// OfflineUUID returns the UUID an offline-mode server assigns to name: the
// name-based version 3 UUID of "OfflinePlayer:" + name, as computed by Java's
// UUID.nameUUIDFromBytes. It does not allocate for names of up to 50 bytes.
func OfflineUUID(name []byte) [16]byte {
	var buf [64]byte
	var u [16]byte
	if len(offlinePrefix)+len(name) <= len(buf) {
		n := copy(buf[:], offlinePrefix)
		n += copy(buf[n:], name)
		u = md5.Sum(buf[:n])
	} else {
		h := md5.New()
		h.Write([]byte(offlinePrefix))
		h.Write(name)
		h.Sum(u[:0])
	}
	u[6] = u[6]&0x0f | 0x30 // version 3
	u[8] = u[8]&0x3f | 0x80 // IETF variant
	return u
}

const hexDigits = "0123456789abcdef"

// AppendUUID appends u in lower-case hex to dst, as 8-4-4-4-12 digit groups
// when dashed is true and as 32 plain digits otherwise, and returns the
// extended slice.
func AppendUUID(dst []byte, u [16]byte, dashed bool) []byte {
	for i, c := range u {
		if dashed && (i == 4 || i == 6 || i == 8 || i == 10) {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0x0f])
	}
	return dst
}

// ParseUUID parses a UUID written as 32 hex digits, either plain or in
// dashed 8-4-4-4-12 form, in either case. ok is false for any other input.
func ParseUUID(s []byte) (u [16]byte, ok bool) {
	switch len(s) {
	case 32:
	case 36:
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return u, false
		}
	default:
		return u, false
	}
	dashed := len(s) == 36
	j := 0
	for i := range u {
		if dashed && (i == 4 || i == 6 || i == 8 || i == 10) {
			j++
		}
		hi, ok1 := unhex(s[j])
		lo, ok2 := unhex(s[j+1])
		if !ok1 || !ok2 {
			return [16]byte{}, false
		}
		u[i] = hi<<4 | lo
		j += 2
	}
	return u, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
