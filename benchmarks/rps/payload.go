package rps

import (
	"encoding/binary"
	"slices"

	ptlv "github.com/tidegate/tidegate/protocol/tlv"
)

// patternSlack is how far the pattern window slides with the sequence
// number; a prime, so that neighbouring requests differ in every byte.
const patternSlack = 251

// payloads makes and checks the deterministic requests of one client: the
// request with sequence number seq has message type seq mod 127 (never the
// reserved error type 0x7F), the keep-alive bit, and a body whose first
// (up to) 8 bytes are seq XOR a per-client key, big-endian (the low bytes
// when the body is shorter, so that short bodies still differ from one
// request to the next), and whose rest is a window of a per-client
// pseudo-random pattern that slides with seq. Any changed, lost, duplicated
// or reordered byte of a response is caught.
type payloads struct {
	format  ptlv.Format
	size    int
	key     uint64
	pattern []byte

	hl        int    // header length
	head      int    // bytes of the id in the body: min(8, size)
	frameSize int    // hl + size
	kb        uint16 // keep-alive bit
}

func newPayloads(f ptlv.Format, client, size int) *payloads {
	p := &payloads{format: f, size: size, key: splitmix(uint64(client) + 0x9E3779B97F4A7C15)}
	p.pattern = make([]byte, size+patternSlack)
	x := p.key
	for i := range p.pattern {
		x = splitmix(x)
		p.pattern[i] = byte(x >> 56)
	}
	f.AppendHeader(nil, ptlv.Header{Length: size}) // panics if size does not fit the length field
	p.hl, p.head, p.frameSize, p.kb = f.HeaderLen(), min(8, size), f.HeaderLen()+size, f.KeepAliveBit()
	return p
}

// splitmix is one step of the SplitMix64 generator.
func splitmix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// msgType returns the message type of request seq.
func msgType(seq int) uint16 { return uint16(seq % 127) }

// window returns the body of request seq after its id.
func (p *payloads) window(seq int) []byte {
	off := seq % patternSlack
	return p.pattern[off : off+p.size-p.head]
}

// appendRequest appends the frame of request seq to dst.
func (p *payloads) appendRequest(dst []byte, seq int) []byte {
	n := len(dst)
	dst = slices.Grow(dst, p.frameSize)[:n+p.frameSize]
	p.put(dst[n:], seq)
	return dst
}

// put writes the frame of request seq into b, frameSize bytes: stores of
// the header fields and the id, and one copy of the pattern window.
func (p *payloads) put(b []byte, seq int) {
	typ := msgType(seq) | p.kb
	tw := p.format.TypeWidth
	if tw == 2 {
		binary.BigEndian.PutUint16(b, typ)
	} else {
		b[0] = byte(typ)
	}
	if p.hl-tw == 4 {
		binary.BigEndian.PutUint32(b[tw:], uint32(p.size))
	} else {
		binary.BigEndian.PutUint16(b[tw:], uint16(p.size))
	}
	id := uint64(seq) ^ p.key
	body := b[p.hl:]
	if p.head == 8 {
		binary.BigEndian.PutUint64(body, id)
	} else {
		var be [8]byte
		binary.BigEndian.PutUint64(be[:], id)
		copy(body, be[8-p.head:])
	}
	copy(body[p.head:], p.window(seq))
}

// verdict is what checking a response found.
type verdict uint8

const (
	// responseOK is a response equal to its request.
	responseOK verdict = iota
	// responseBadBody is a response with the right header and a wrong body:
	// that request failed, but the frames that follow can still be read.
	responseBadBody
	// responseBadHeader is an error frame or a response whose type,
	// keep-alive bit or length is wrong: the stream cannot be trusted.
	responseBadHeader
)

// check compares a decoded response (header h, body) with request seq.
func (p *payloads) check(h ptlv.Header, body []byte, seq int) verdict {
	if h.Type != msgType(seq) || !h.KeepAlive || h.Length != p.size || len(body) != p.size {
		return responseBadHeader
	}
	var be [8]byte
	binary.BigEndian.PutUint64(be[:], uint64(seq)^p.key)
	if string(body[:p.head]) != string(be[8-p.head:]) || string(body[p.head:]) != string(p.window(seq)) {
		return responseBadBody
	}
	return responseOK
}
