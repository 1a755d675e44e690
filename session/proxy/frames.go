package proxy

// frameScanner follows Minecraft frame boundaries (VarInt length prefixes)
// across reads without copying, to count frames in a relayed stream.
// Compression keeps the outer length prefix, so it still works after Set
// Compression; an encrypted stream (online mode) breaks the framing, and
// the scanner then stops (broken is set) instead of guessing.
type frameScanner struct {
	remaining int    // body bytes of the current frame still to come
	length    uint32 // length prefix being read
	shift     uint8  // bits of length read so far
	broken    bool
}

// scan consumes b and returns the number of frames that ended in it.
func (f *frameScanner) scan(b []byte) (frames int) {
	if f.broken {
		return 0
	}
	for len(b) > 0 {
		if f.remaining > 0 {
			k := min(f.remaining, len(b))
			f.remaining -= k
			b = b[k:]
			if f.remaining == 0 {
				frames++
			}
			continue
		}
		c := b[0]
		b = b[1:]
		f.length |= uint32(c&0x7f) << f.shift
		f.shift += 7
		if c&0x80 != 0 {
			if f.shift >= 21 { // a frame length has at most 3 bytes
				f.broken = true
				return frames
			}
			continue
		}
		f.remaining = int(f.length)
		f.length, f.shift = 0, 0
		if f.remaining == 0 {
			frames++
		}
	}
	return frames
}
