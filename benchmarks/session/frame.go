package session

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/tidegate/tidegate/benchmarks/mcclient"
	"github.com/tidegate/tidegate/protocol/mc"
)

// codec builds and checks the PLAY frames of one workload. Frames all have
// the same size; the filler of packet (conn, seq) is
// pattern[off : off+fillerLen] with off = (seq*131 + conn*31) mod 251.
type codec struct {
	payload  int
	frameLen int
	header   []byte // the frame's length prefix
	pattern  []byte // patternPeriod + filler length bytes
}

func newCodec(payload int) *codec {
	k := &codec{payload: payload}
	k.header = mc.AppendVarInt(nil, int32(payload))
	k.frameLen = len(k.header) + payload
	k.pattern = mcclient.FillerPattern(payload - MinPayload)
	return k
}

func (k *codec) filler(conn, seq uint32) []byte {
	off := (uint64(seq)*131 + uint64(conn)*31) % mcclient.PatternPeriod
	return k.pattern[off : off+uint64(k.payload-MinPayload)]
}

// appendFrame appends the frame of packet (conn, seq) to dst.
func (k *codec) appendFrame(dst []byte, conn, seq uint32) []byte {
	dst = append(dst, k.header...)
	dst = append(dst, mcclient.PlayPacketID)
	dst = binary.BigEndian.AppendUint32(dst, conn)
	dst = binary.BigEndian.AppendUint32(dst, seq)
	return append(dst, k.filler(conn, seq)...)
}

// check compares a whole frame f (k.frameLen bytes) with packet (conn, seq).
func (k *codec) check(f []byte, conn, seq uint32) error {
	h := len(k.header)
	if !bytes.Equal(f[:h], k.header) {
		return fmt.Errorf("conn %d seq %d: length prefix % x, want % x", conn, seq, f[:h], k.header)
	}
	b := f[h:]
	if b[0] != mcclient.PlayPacketID {
		return fmt.Errorf("conn %d seq %d: packet id 0x%02x, want 0x%02x", conn, seq, b[0], mcclient.PlayPacketID)
	}
	if c := binary.BigEndian.Uint32(b[1:5]); c != conn {
		return fmt.Errorf("conn %d seq %d: connection number %d", conn, seq, c)
	}
	if s := binary.BigEndian.Uint32(b[5:9]); s != seq {
		return fmt.Errorf("conn %d seq %d: sequence number %d", conn, seq, s)
	}
	if want := k.filler(conn, seq); !bytes.Equal(b[MinPayload:], want) {
		i := mcclient.FirstDifference(b[MinPayload:], want)
		return fmt.Errorf("conn %d seq %d: payload byte %d is 0x%02x, want 0x%02x", conn, seq, i, b[MinPayload+i], want[i])
	}
	return nil
}

// frameHeaderOK reports whether buffered bytes start with the expected
// length prefix; if not, the stream's framing is lost.
func (k *codec) frameHeaderOK(b []byte) bool {
	n := min(len(b), len(k.header))
	return bytes.Equal(b[:n], k.header[:n])
}
