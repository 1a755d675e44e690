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
	// Finish what the last read cut: a frame body or a length prefix.
	for len(b) > 0 && (f.remaining > 0 || f.shift > 0) {
		if f.remaining > 0 {
			k := min(f.remaining, len(b))
			f.remaining -= k
			b = b[k:]
			if f.remaining == 0 {
				frames++
			}
			continue
		}
		if !f.lengthByte(b[0]) {
			return frames
		}
		b = b[1:]
		if f.shift == 0 && f.remaining == 0 {
			frames++ // a zero-length frame
		}
	}
	// Whole prefixes, with the position in a local: this loop runs once per
	// frame of a burst of small frames, the proxy's commonest read.
	i, n := 0, len(b)
	for i < n {
		c := b[i]
		if c < 0x80 {
			i += 1 + int(c)
			frames++
			continue
		}
		if i+2 >= n {
			break // the prefix may go on in the next read
		}
		c1 := b[i+1]
		if c1 < 0x80 {
			i += 2 + (int(c&0x7f) | int(c1)<<7)
			frames++
			continue
		}
		c2 := b[i+2]
		if c2 >= 0x80 {
			f.broken = true // a frame length has at most 3 bytes
			return frames
		}
		i += 3 + (int(c&0x7f) | int(c1&0x7f)<<7 | int(c2)<<14)
		frames++
	}
	if i > n { // the last frame's body goes on in the next read
		f.remaining = i - n
		return frames - 1
	}
	for _, c := range b[i:] { // a prefix cut by the end of b
		if !f.lengthByte(c) {
			return frames
		}
		if f.shift == 0 && f.remaining == 0 {
			frames++
		}
	}
	return frames
}

// lengthByte takes one byte of a length prefix; it reports false, with
// broken set, for a prefix longer than 3 bytes.
func (f *frameScanner) lengthByte(c byte) bool {
	f.length |= uint32(c&0x7f) << f.shift
	f.shift += 7
	if c&0x80 != 0 {
		if f.shift >= 21 {
			f.broken = true
			return false
		}
		return true
	}
	f.remaining = int(f.length)
	f.length, f.shift = 0, 0
	return true
}
