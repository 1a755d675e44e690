package textcomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// maxSkipDepth is how deeply the NBT tags NBT skips may nest (vanilla's
// limit).
const maxSkipDepth = 512

// NBT tag types.
const (
	// TagEnd ends a compound; the other types are named by their payloads.
	TagEnd       = 0
	TagByte      = 1
	TagShort     = 2
	TagInt       = 3
	TagLong      = 4
	TagFloat     = 5
	TagDouble    = 6
	TagByteArray = 7
	TagString    = 8
	TagList      = 9
	TagCompound  = 10
	TagIntArray  = 11
	TagLongArray = 12
)

// fixed is the payload size of the fixed-size tag types.
var fixed = [...]int{TagByte: 1, TagShort: 2, TagInt: 4, TagLong: 8, TagFloat: 4, TagDouble: 8}

// ErrTruncated is why a component that ends inside a tag is not read.
var ErrTruncated = errors.New("NBT ends inside a tag")

// NBT returns at most max bytes of the plain text of the text component at
// the start of b, in network NBT (a tag type, then its payload, unnamed:
// a string, a compound or a list of either), whether the text was cut at
// max, and the component's length in bytes.
func NBT(b []byte, max int) (string, bool, int, error) {
	r := nbtReader{b: b[:min(len(b), MaxInput)]}
	t := text{max: max}
	r.component(&t, r.u8(), 0)
	if r.err != nil && len(b) > MaxInput && errors.Is(r.err, ErrTruncated) {
		r.err = fmt.Errorf("NBT of over %d bytes: %w", MaxInput, ErrTooLong)
	}
	if r.err != nil {
		return "", false, 0, fmt.Errorf("text component NBT: %w", r.err)
	}
	return t.b.String(), t.cut, r.off, nil
}

// nbtReader reads NBT from b; the first error stops it.
type nbtReader struct {
	b   []byte
	off int
	err error
}

func (r *nbtReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.err = fmt.Errorf("%d bytes wanted at byte %d, %d left: %w", n, r.off, len(r.b)-r.off, ErrTruncated)
		return nil
	}
	r.off += n
	return r.b[r.off-n : r.off]
}

func (r *nbtReader) u8() byte {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *nbtReader) str() []byte {
	p := r.take(2)
	if p == nil {
		return nil
	}
	return r.take(int(binary.BigEndian.Uint16(p)))
}

// count reads a list or array length and refuses a negative one.
func (r *nbtReader) count() int {
	p := r.take(4)
	if p == nil {
		return 0
	}
	n := int32(binary.BigEndian.Uint32(p))
	if n < 0 {
		r.err = fmt.Errorf("negative length %d at byte %d", n, r.off-4)
	}
	return int(n)
}

// array skips n elements of size bytes, refusing more than is left
// before multiplying past it.
func (r *nbtReader) array(n, size int) {
	if r.err == nil && n > (len(r.b)-r.off)/size {
		r.err = fmt.Errorf("array of %d %d-byte elements at byte %d, %d bytes left: %w", n, size, r.off, len(r.b)-r.off, ErrTruncated)
		return
	}
	r.take(n * size)
}

// skip skips the payload of a tag of type t at depth.
func (r *nbtReader) skip(t byte, depth int) {
	if r.err != nil {
		return
	}
	if depth > maxSkipDepth {
		r.err = fmt.Errorf("NBT nested deeper than %d", maxSkipDepth)
		return
	}
	switch t {
	case TagByte, TagShort, TagInt, TagLong, TagFloat, TagDouble:
		r.take(fixed[t])
	case TagByteArray:
		r.array(r.count(), 1)
	case TagIntArray:
		r.array(r.count(), 4)
	case TagLongArray:
		r.array(r.count(), 8)
	case TagString:
		r.str()
	case TagList:
		et, n := r.u8(), r.count()
		switch {
		case r.err != nil || n == 0 || et == TagEnd: // a list of nothing: no payloads
		case et <= TagDouble:
			r.array(n, fixed[et])
		default:
			for i := 0; i < n && r.err == nil; i++ {
				r.skip(et, depth+1)
			}
		}
	case TagCompound:
		for r.err == nil {
			ct := r.u8()
			if ct == TagEnd || r.err != nil {
				return
			}
			r.str()
			r.skip(ct, depth+1)
		}
	default:
		r.err = fmt.Errorf("tag type %d unknown at byte %d", t, r.off-1)
	}
}

// SkipNBT returns the length of the payload of an NBT tag of type tag at
// the start of b (network form: named tags inside compounds). Every step
// consumes input, so the work is bounded by len(b); nesting deeper than
// 512 (vanilla's limit) is refused, a length past the input wraps
// ErrTruncated.
func SkipNBT(b []byte, tag byte) (int, error) {
	r := nbtReader{b: b}
	if r.skip(tag, 0); r.err != nil {
		return 0, r.err
	}
	return r.off, nil
}

// component adds the text of the component whose payload, of tag type t,
// starts at r.off.
func (r *nbtReader) component(t *text, tag byte, depth int) {
	if r.err != nil {
		return
	}
	if depth > MaxDepth {
		r.err = fmt.Errorf("text component nested deeper than %d", MaxDepth)
		return
	}
	switch tag {
	case TagString:
		t.add(modifiedUTF8(r.str()))
	case TagList:
		et, n := r.u8(), r.count()
		if et == TagEnd && n > 0 && r.err == nil {
			r.err = fmt.Errorf("list of %d end tags at byte %d", n, r.off)
		}
		for i := 0; i < n && r.err == nil; i++ {
			r.component(t, et, depth+1)
		}
	case TagCompound:
		r.compound(t, depth)
	default:
		r.skip(tag, depth) // a number or an array: no text
	}
}

// compound adds the text of a compound component: its text (or its
// translate's fallback, else key), then its extra list, whichever order
// the keys come in.
func (r *nbtReader) compound(t *text, depth int) {
	var own, translate, fallback []byte
	extra := -1 // where the extra list's payload starts
	for r.err == nil {
		ct := r.u8()
		if ct == TagEnd || r.err != nil {
			break
		}
		name := string(r.str())
		switch {
		case ct == TagString && (name == "text" || name == "translate" || name == "fallback"):
			s := r.str()
			switch name {
			case "text":
				own = s
			case "translate":
				translate = s
			default:
				fallback = s
			}
			continue
		case ct == TagList && name == "extra":
			extra = r.off
		}
		r.skip(ct, depth+1)
	}
	if r.err != nil {
		return
	}
	switch {
	case own != nil:
		t.add(modifiedUTF8(own))
	case fallback != nil && translate != nil:
		t.add(modifiedUTF8(fallback))
	case translate != nil:
		t.add(modifiedUTF8(translate))
	}
	if extra >= 0 {
		end := r.off
		r.off = extra
		r.component(t, TagList, depth+1)
		r.off = end
	}
}

// modifiedUTF8 decodes Java's modified UTF-8 (NUL as C0 80,
// supplementary characters as two 3-byte surrogates); what does not
// decode becomes U+FFFD.
func modifiedUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]rune, 0, len(b))
	for i := 0; i < len(b); {
		switch {
		case b[i] == 0xc0 && i+1 < len(b) && b[i+1] == 0x80:
			out = append(out, 0)
			i += 2
			continue
		case i+5 < len(b) && b[i] == 0xed && b[i+1]&0xf0 == 0xa0 && b[i+3] == 0xed && b[i+4]&0xf0 == 0xb0:
			hi := rune(b[i+1]&0x0f)<<6 | rune(b[i+2]&0x3f)
			lo := rune(b[i+4]&0x0f)<<6 | rune(b[i+5]&0x3f)
			out = append(out, 0x10000+hi<<10+lo)
			i += 6
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		out = append(out, r)
		i += n
	}
	return string(out)
}
