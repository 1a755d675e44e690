package rps

import (
	"bytes"
	"encoding/binary"

	ptlv "github.com/tidegate/tidegate/protocol/tlv"
)

// patternSlack is how far the pattern window slides with the sequence
// number; a prime, so that neighbouring requests differ in every byte.
const patternSlack = 251

// payloads makes and checks the deterministic requests of one client: the
// request with sequence number seq has message type seq mod 127 (never the
// reserved error type 0x7F), the keep-alive bit, and a body whose first
// (up to) 8 bytes are seq XOR a per-client key and whose rest is a window of
// a per-client pseudo-random pattern that slides with seq. Any changed,
// lost, duplicated or reordered byte of a response is caught.
type payloads struct {
	format  ptlv.Format
	size    int
	key     uint64
	pattern []byte
}

func newPayloads(f ptlv.Format, client, size int) *payloads {
	p := &payloads{format: f, size: size, key: splitmix(uint64(client) + 0x9E3779B97F4A7C15)}
	p.pattern = make([]byte, size+patternSlack)
	x := p.key
	for i := range p.pattern {
		x = splitmix(x)
		p.pattern[i] = byte(x >> 56)
	}
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

// appendRequest appends the frame of request seq to dst.
func (p *payloads) appendRequest(dst []byte, seq int) []byte {
	dst = p.format.AppendHeader(dst, ptlv.Header{Type: msgType(seq), KeepAlive: true, Length: p.size})
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], uint64(seq)^p.key)
	head := min(8, p.size)
	dst = append(dst, id[:head]...)
	off := seq % patternSlack
	return append(dst, p.pattern[off:off+p.size-head]...)
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
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], uint64(seq)^p.key)
	head := min(8, p.size)
	off := seq % patternSlack
	if !bytes.Equal(body[:head], id[:head]) || !bytes.Equal(body[head:], p.pattern[off:off+p.size-head]) {
		return responseBadBody
	}
	return responseOK
}
