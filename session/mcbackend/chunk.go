package mcbackend

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/tidegate/tidegate/protocol/mc"
)

// Chunk requests (Config.ChunkReplies): a play frame whose body is
//
//	VarInt ChunkRequestPacketID | ChunkRequestMagic | uint32 reply size (big-endian) | anything
//
// is answered, instead of with its echo, by one frame whose body is reply
// size bytes long: the request's body unchanged, then the filler bytes
// that AppendChunkFiller gives for the positions after it. A load generator
// gets a backend-to-client stream of large frames, as chunk data is,
// without the backend keeping any state: the request names everything the
// reply holds.
const (
	// ChunkRequestPacketID is the packet ID of a chunk request, a single
	// VarInt byte no serverbound play packet of 1.7.10 uses.
	ChunkRequestPacketID = 0x7F
	// ChunkRequestMagic follows the packet ID, so that a frame that merely
	// has that ID is echoed as every other frame.
	ChunkRequestMagic = "tgck"
	// ChunkRequestHeaderLen is the packet ID, the magic and the reply size.
	ChunkRequestHeaderLen = 1 + len(ChunkRequestMagic) + 4
	// MaxChunkReply is the largest reply body a request may ask for.
	MaxChunkReply = 1 << 20
)

// AppendChunkRequest appends the body (packet ID and data) of a chunk
// request for a reply of size bytes to dst; the caller appends whatever
// else the request carries.
func AppendChunkRequest(dst []byte, size int) []byte {
	dst = append(dst, ChunkRequestPacketID)
	dst = append(dst, ChunkRequestMagic...)
	return binary.BigEndian.AppendUint32(dst, uint32(size))
}

// chunkFillerPeriod is the period of the filler: a prime, so that the
// filler does not line up with itself at a power-of-two offset, where a
// relay that repeated or skipped a buffer's worth of bytes would hide.
const chunkFillerPeriod = 65521

// chunkFiller is the filler of every reply position, built on first use: a
// backend without chunk replies never holds it. Replies reference slices of
// it (the batch passes them to writev), so it is never written after.
var chunkFiller = sync.OnceValue(func() []byte {
	return AppendChunkFiller(make([]byte, 0, MaxChunkReply), 0, MaxChunkReply)
})

// AppendChunkFiller appends the filler bytes of reply body positions
// from..to-1 to dst.
func AppendChunkFiller(dst []byte, from, to int) []byte {
	for i := from; i < to; i++ {
		j := i % chunkFillerPeriod
		dst = append(dst, byte(j*131+j>>8+17))
	}
	return dst
}

// isChunkRequest reports whether a plain play frame body is a chunk request.
func isChunkRequest(body []byte) bool {
	return len(body) >= ChunkRequestHeaderLen && body[0] == ChunkRequestPacketID &&
		string(body[1:1+len(ChunkRequestMagic)]) == ChunkRequestMagic
}

// emitChunkReply answers the chunk request body with its reply, or returns
// the bad input it is.
func (m *machine) emitChunkReply(out emitter, body []byte) error {
	size := int64(binary.BigEndian.Uint32(body[1+len(ChunkRequestMagic):]))
	if size < int64(len(body)) || size > MaxChunkReply {
		return badInput(ReasonBadChunkRequest, fmt.Errorf("chunk request of %d bytes asks for a %d-byte reply: want %d..%d",
			len(body), size, len(body), MaxChunkReply))
	}
	k := m.codec
	k.frame = mc.AppendVarInt(k.frame[:0], int32(size))
	k.frame = append(k.frame, body...)
	out.Copy(k.frame)
	out.Add(chunkFiller()[len(body):size])
	m.counters.chunkReplies.Add(1)
	m.counters.chunkReplyBytes.Add(int64(len(k.frame)) + size - int64(len(body)))
	return nil
}
