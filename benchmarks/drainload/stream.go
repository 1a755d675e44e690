package drainload

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/tidegate/tidegate/protocol/tlv"
)

// stream is the byte stream one connection sends: keep-alive TLV requests
// of one size, request k carrying k in its first body bytes. The echo server
// answers each with the same type and body, so the response stream is the
// same bytes, and any lost, repeated or reordered byte shows.
type stream struct {
	frame []byte // request 0
	hdr   int    // header length: the sequence number starts there
}

// seqBytes is the width of the sequence number at the start of each body.
const seqBytes = 8

func newStream(size int) (*stream, error) {
	f := tlv.DefaultFormat
	body := size - f.HeaderLen()
	if body < seqBytes || body > f.MaxBody {
		return nil, fmt.Errorf("request size %d: want %d..%d bytes", size, f.HeaderLen()+seqBytes, f.HeaderLen()+f.MaxBody)
	}
	b := make([]byte, body)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return &stream{frame: f.AppendFrame(nil, tlv.Header{Type: 1, KeepAlive: true}, b), hdr: f.HeaderLen()}, nil
}

// size is the length of one request.
func (s *stream) size() int64 { return int64(len(s.frame)) }

// fill writes the stream's bytes [pos, pos+len(dst)) into dst.
func (s *stream) fill(dst []byte, pos int64) {
	n := s.size()
	var seq [seqBytes]byte
	for len(dst) > 0 {
		k, off := pos/n, pos%n
		binary.BigEndian.PutUint64(seq[:], uint64(k))
		c := copy(dst, s.frame[off:])
		// Patch the sequence number where dst holds part of it.
		for i := 0; i < seqBytes; i++ {
			if j := int64(s.hdr+i) - off; j >= 0 && j < int64(c) {
				dst[j] = seq[i]
			}
		}
		dst, pos = dst[c:], pos+int64(c)
	}
}

// check reports the first byte of got that differs from the stream at pos.
func (s *stream) check(got, scratch []byte, pos int64) error {
	for len(got) > 0 {
		n := min(len(got), len(scratch))
		s.fill(scratch[:n], pos)
		if bytes.Equal(got[:n], scratch[:n]) {
			got, pos = got[n:], pos+int64(n)
			continue
		}
		for i := 0; i < n; i++ {
			if got[i] != scratch[i] {
				p := pos + int64(i)
				return fmt.Errorf("response byte %d (request %d, offset %d) is %#x, want %#x",
					p, p/s.size(), p%s.size(), got[i], scratch[i])
			}
		}
		got, pos = got[n:], pos+int64(n)
	}
	return nil
}
