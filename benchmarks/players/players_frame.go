package players

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/tidegate/tidegate/benchmarks/mcclient"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// playersFieldsLen is what every frame of the players workload carries
// after its header: the session and sequence numbers, the send time (ns
// since the phase's clock origin) and a check word over the three.
const playersFieldsLen = 4 + 4 + 8 + 4

// playersCodec builds the frames of a players workload and checks their
// replies. Everything about frame seq of a session but its send time
// follows from the two numbers and the seed, so the reader of a connection
// knows what is due without asking its sender: the body size (FrameMin to
// FrameMax), whether it is a chunk request (one sequence number in
// ChunkEvery, offset by the session so that the sessions' requests are
// spread over time) and the chunk's size. An echo frame's body is
//
//	echo ID (0x03, Modern 0x7E) | session | seq | send time | check | filler
//
// and a chunk request's is the backend's request header (AppendChunkRequest)
// followed by the same fields and filler; its reply is that body followed
// by the backend's chunk filler up to the chunk's size. The filler of a
// frame is the pattern of package session's echo frames at an offset drawn
// from session and seq.
type playersCodec struct {
	p       Params
	pattern []byte // the frames' filler
	chunk   []byte // the backend's chunk filler, positions 0..ChunkMax
	echoID  byte   // the echo frames' packet ID
}

func newPlayersCodec(p Params) *playersCodec {
	k := &playersCodec{p: p, pattern: mcclient.FillerPattern(p.FrameMax), echoID: mcclient.PlayPacketID}
	if p.Modern {
		k.echoID = ModernEchoID
	}
	if p.ChunkEvery > 0 {
		k.chunk = mcbackend.AppendChunkFiller(make([]byte, 0, p.ChunkMax), 0, p.ChunkMax)
	}
	return k
}

// mix64 is SplitMix64's finalizer: a cheap hash whose every output bit
// depends on every input bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// plan returns the body size of frame seq of session and, for a chunk
// request, the size of the reply's body (0 for a frame that is echoed).
func (k *playersCodec) plan(session, seq uint32) (body, chunk int) {
	h := mix64(mix64(k.p.Seed) ^ uint64(session)<<32 ^ uint64(seq))
	body = k.p.FrameMin + int(h%uint64(k.p.FrameMax-k.p.FrameMin+1))
	if e := uint64(k.p.ChunkEvery); e > 0 && (uint64(seq)+uint64(session))%e == 0 {
		chunk = k.p.ChunkMin + int((h>>32)%uint64(k.p.ChunkMax-k.p.ChunkMin+1))
	}
	return body, chunk
}

// checkWord binds the send time to the frame, so that a corrupted time is
// caught rather than measured.
func checkWord(session, seq uint32, sent int64) uint32 {
	return uint32(mix64(uint64(session)<<32|uint64(seq)) ^ mix64(uint64(sent)))
}

// appendFrame appends frame seq of session, sent at sent, to dst.
func (k *playersCodec) appendFrame(dst []byte, session, seq uint32, sent int64) []byte {
	body, chunk := k.plan(session, seq)
	dst = mc.AppendVarInt(dst, int32(body))
	start := len(dst)
	if chunk > 0 {
		dst = mcbackend.AppendChunkRequest(dst, chunk)
	} else {
		dst = append(dst, k.echoID)
	}
	dst = binary.BigEndian.AppendUint32(dst, session)
	dst = binary.BigEndian.AppendUint32(dst, seq)
	dst = binary.BigEndian.AppendUint64(dst, uint64(sent))
	dst = binary.BigEndian.AppendUint32(dst, checkWord(session, seq, sent))
	off := (uint64(seq)*131 + uint64(session)*31) % mcclient.PatternPeriod
	return append(dst, k.pattern[off:off+uint64(body-(len(dst)-start))]...)
}

// replyFields reads the session, sequence number and send time a reply
// body says it answers; ok is false for a body that is neither an echo nor
// a chunk reply of this workload.
func (k *playersCodec) replyFields(body []byte) (session, seq uint32, sent int64, ok bool) {
	off := 1
	if len(body) >= mcbackend.ChunkRequestHeaderLen && body[0] == mcbackend.ChunkRequestPacketID &&
		string(body[1:1+len(mcbackend.ChunkRequestMagic)]) == mcbackend.ChunkRequestMagic {
		off = mcbackend.ChunkRequestHeaderLen
	} else if len(body) == 0 || body[0] != k.echoID {
		return 0, 0, 0, false
	}
	if len(body) < off+playersFieldsLen {
		return 0, 0, 0, false
	}
	f := body[off:]
	return binary.BigEndian.Uint32(f), binary.BigEndian.Uint32(f[4:]), int64(binary.BigEndian.Uint64(f[8:])), true
}

// verify compares reply body with the reply due to frame seq of session
// sent at sent; scratch is reused for the expected frame and returned. It
// reports whether the reply was a chunk.
func (k *playersCodec) verify(body []byte, session, seq uint32, sent int64, scratch []byte) (chunk bool, _ []byte, err error) {
	_, size := k.plan(session, seq)
	scratch = k.appendFrame(scratch[:0], session, seq, sent)
	_, h, _ := mc.ReadVarInt(scratch)
	req := scratch[h:]
	want := len(req)
	if size > 0 {
		want = size
	}
	if len(body) != want {
		return false, scratch, fmt.Errorf("session %d frame %d: reply of %d bytes, want %d", session, seq, len(body), want)
	}
	if !bytes.Equal(body[:len(req)], req) {
		i := mcclient.FirstDifference(body, req)
		return false, scratch, fmt.Errorf("session %d frame %d: reply byte %d is 0x%02x, want 0x%02x", session, seq, i, body[i], req[i])
	}
	if size > 0 {
		if tail := k.chunk[len(req):size]; !bytes.Equal(body[len(req):], tail) {
			i := len(req) + mcclient.FirstDifference(body[len(req):], tail)
			return true, scratch, fmt.Errorf("session %d frame %d: chunk byte %d is 0x%02x, want 0x%02x", session, seq, i, body[i], k.chunk[i])
		}
	}
	return size > 0, scratch, nil
}
