package play

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// maxNBTDepth is how deep compounds and lists may nest, as vanilla allows.
const maxNBTDepth = 512

// NBT tag types.
const (
	tagEnd       = 0
	tagByte      = 1
	tagShort     = 2
	tagInt       = 3
	tagLong      = 4
	tagFloat     = 5
	tagDouble    = 6
	tagByteArray = 7
	tagString    = 8
	tagList      = 9
	tagCompound  = 10
	tagIntArray  = 11
	tagLongArray = 12
)

// fixedSize is the payload size of the fixed-size tag types, 0 otherwise.
var fixedSize = [...]int{tagByte: 1, tagShort: 2, tagInt: 4, tagLong: 8, tagFloat: 4, tagDouble: 8, tagLongArray: 0}

// skipNamedNBT returns the length of the named NBT tag at the start of b,
// in the network form before 1.20.2 (a type, a name, a payload). Every
// step consumes input, so the work is bounded by len(b); nesting deeper
// than maxNBTDepth is refused.
func skipNamedNBT(b []byte) (int, error) {
	s := nbtSkipper{b: b}
	t := s.u8()
	if t != tagEnd {
		s.skip(int(s.u16()))
		s.payload(t, 0)
	}
	if s.err != nil {
		return 0, fmt.Errorf("NBT: %w", s.err)
	}
	return s.off, nil
}

type nbtSkipper struct {
	b   []byte
	off int
	err error
}

func (s *nbtSkipper) skip(n int) {
	if s.err != nil {
		return
	}
	if n < 0 || n > len(s.b)-s.off {
		s.err = fmt.Errorf("%d bytes wanted at byte %d, %d left: %w", n, s.off, len(s.b)-s.off, ErrTruncated)
		return
	}
	s.off += n
}

func (s *nbtSkipper) u8() byte {
	if s.skip(1); s.err != nil {
		return 0
	}
	return s.b[s.off-1]
}

func (s *nbtSkipper) u16() uint16 {
	if s.skip(2); s.err != nil {
		return 0
	}
	return binary.BigEndian.Uint16(s.b[s.off-2:])
}

func (s *nbtSkipper) i32() int32 {
	if s.skip(4); s.err != nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(s.b[s.off-4:]))
}

// count reads an array or list length and refuses a negative one.
func (s *nbtSkipper) count() int {
	n := s.i32()
	if n < 0 && s.err == nil {
		s.err = fmt.Errorf("negative length %d at byte %d", n, s.off-4)
	}
	return int(n)
}

// array skips n elements of size bytes each, refusing more than is left
// before multiplying past it.
func (s *nbtSkipper) array(n, size int) {
	if s.err == nil && n > (len(s.b)-s.off)/size {
		s.err = fmt.Errorf("array of %d %d-byte elements at byte %d, %d bytes left: %w", n, size, s.off, len(s.b)-s.off, ErrTruncated)
		return
	}
	s.skip(n * size)
}

// payload skips the payload of a tag of type t at nesting depth.
func (s *nbtSkipper) payload(t byte, depth int) {
	if s.err != nil {
		return
	}
	if depth > maxNBTDepth {
		s.err = fmt.Errorf("nested deeper than %d", maxNBTDepth)
		return
	}
	switch t {
	case tagByte, tagShort, tagInt, tagLong, tagFloat, tagDouble:
		s.skip(fixedSize[t])
	case tagByteArray:
		s.array(s.count(), 1)
	case tagIntArray:
		s.array(s.count(), 4)
	case tagLongArray:
		s.array(s.count(), 8)
	case tagString:
		s.skip(int(s.u16()))
	case tagList:
		et := s.u8()
		n := s.count()
		if et == tagEnd || s.err != nil {
			return // a list of nothing: no payloads
		}
		if et <= tagDouble {
			s.array(n, fixedSize[et])
			return
		}
		for i := 0; i < n && s.err == nil; i++ {
			s.payload(et, depth+1)
		}
	case tagCompound:
		for s.err == nil {
			ct := s.u8()
			if ct == tagEnd {
				return
			}
			s.skip(int(s.u16()))
			s.payload(ct, depth+1)
		}
	default:
		s.err = errors.New("tag type " + fmt.Sprint(t) + " unknown")
	}
}
