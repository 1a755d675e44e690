package mc

// FrameCounter follows Minecraft frame boundaries (VarInt length prefixes)
// across reads without copying, to count frames in a relayed stream.
// Compression keeps the outer length prefix, so it still works after Set
// Compression; an encrypted stream (online mode) breaks the framing, and
// the counter then stops (Broken) instead of guessing.
//
// A proxy session holds two, so the state is 8 bytes: a body and a length
// prefix are never read at once, so n is the one or the other.
type FrameCounter struct {
	n      uint32 // shift 0: body bytes of the current frame still to come; else the length prefix so far
	shift  uint8  // bits of the length prefix read so far; 0 outside a prefix
	broken bool
}

// Count consumes b and returns the number of frames that ended in it.
func (f *FrameCounter) Count(b []byte) (frames int) {
	if f.broken {
		return 0
	}
	// Finish what the last read cut: a frame body or a length prefix.
	for len(b) > 0 && (f.n > 0 || f.shift > 0) {
		if f.shift == 0 { // in a body
			k := min(int(f.n), len(b))
			f.n -= uint32(k)
			b = b[k:]
			if f.n == 0 {
				frames++
			}
			continue
		}
		if !f.lengthByte(b[0]) {
			return frames
		}
		b = b[1:]
		if f.shift == 0 && f.n == 0 {
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
		f.n = uint32(i - n)
		return frames - 1
	}
	for _, c := range b[i:] { // a prefix cut by the end of b
		if !f.lengthByte(c) {
			return frames
		}
		if f.shift == 0 && f.n == 0 {
			frames++
		}
	}
	return frames
}

// lengthByte takes one byte of a length prefix; it reports false, with
// broken set, for a prefix longer than 3 bytes.
// It is called at the start of a prefix (n 0) or inside one.
func (f *FrameCounter) lengthByte(c byte) bool {
	f.n |= uint32(c&0x7f) << f.shift
	f.shift += 7
	if c&0x80 != 0 {
		if f.shift >= 21 {
			f.broken = true
			return false
		}
		return true
	}
	f.shift = 0 // n is now the body's length
	return true
}

// Broken reports whether the stream stopped looking like frames (a length
// prefix over 3 bytes); the counter counts nothing after that.
func (f *FrameCounter) Broken() bool { return f.broken }

// FramePosition is where a FrameCounter stands, in a form that keeps the
// remaining body and a partial length prefix apart (as counters before the
// 8-byte one did), so that a live upgrade can carry it between processes of
// either kind.
type FramePosition struct {
	Remaining int    // body bytes of the current frame still to come
	Length    uint32 // the length prefix read so far, when Shift > 0
	Shift     uint8  // bits of the length prefix read so far
	Broken    bool
}

// Position returns where f stands.
func (f *FrameCounter) Position() FramePosition {
	p := FramePosition{Shift: f.shift, Broken: f.broken}
	if f.shift > 0 {
		p.Length = f.n
	} else {
		p.Remaining = int(f.n)
	}
	return p
}

// FrameCounterAt returns the FrameCounter standing at p, the inverse of
// Position.
func FrameCounterAt(p FramePosition) FrameCounter {
	f := FrameCounter{shift: p.Shift, broken: p.Broken, n: uint32(p.Remaining)}
	if p.Shift > 0 {
		f.n = p.Length
	}
	return f
}
