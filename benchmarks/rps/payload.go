package rps

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/tidegate/tidegate/protocol/tlv"
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
	size    int
	key     uint64
	pattern []byte
	heads   []uint64 // by message type: its requests' header, then zeros, as 8 little-endian bytes

	hl        int // header length
	head      int // bytes of the id in the body: min(8, size)
	frameSize int // hl + size
}

// newPayloads returns the payloads of a client. It panics if f is invalid or
// size does not fit its length field, which Config.normalize rules out.
func newPayloads(f tlv.Format, client, size int) *payloads {
	enc, err := f.Encoder()
	if err != nil {
		panic(fmt.Sprintf("rps: payloads of %d bytes: %v", size, err))
	}
	p := &payloads{size: size, key: splitmix(uint64(client) + 0x9E3779B97F4A7C15)}
	// Every request of a type has the same header: encoded once here, and
	// stored into each request with one 8-byte store.
	p.heads = make([]uint64, msgTypes)
	for typ := range p.heads {
		var head [8]byte
		if err := enc.PutHeader(head[:], tlv.Header{Type: uint16(typ), KeepAlive: true, Length: size}); err != nil {
			panic(fmt.Sprintf("rps: payloads of %d bytes: %v", size, err))
		}
		p.heads[typ] = binary.LittleEndian.Uint64(head[:])
	}
	p.pattern = make([]byte, size+patternSlack)
	x := p.key
	for i := range p.pattern {
		x = splitmix(x)
		p.pattern[i] = byte(x >> 56)
	}
	p.hl, p.head, p.frameSize = enc.HeaderLen(), min(8, size), enc.HeaderLen()+size
	return p
}

// splitmix is one step of the SplitMix64 generator.
func splitmix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// msgTypes is the number of message types requests use: 0 to 126, below
// every format's reserved error type.
const msgTypes = 127

// msgType returns the message type of request seq.
func msgType(seq int) uint16 { return uint16(seq % msgTypes) }

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

// put writes the frame of request seq into b, frameSize bytes: a store of
// the header, stores of the id, and one copy of the pattern window.
func (p *payloads) put(b []byte, seq int) {
	if head := p.heads[msgType(seq)]; len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, head) // the bytes past the header are the body's, written below
	} else {
		var be [8]byte
		binary.LittleEndian.PutUint64(be[:], head)
		copy(b, be[:p.hl])
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
func (p *payloads) check(h tlv.Header, body []byte, seq int) verdict {
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
