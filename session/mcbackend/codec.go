package mcbackend

import (
	"fmt"

	"github.com/tidegate/tidegate/protocol/mc"
)

// codec holds one loop's scratch space for building and decoding packets:
// nothing in it survives a callback, so all connections of a loop share it.
type codec struct {
	packet []byte // a packet body (ID and data) being built
	frame  []byte // a whole frame being built

	comp mc.Compressor // the compressed framing, zlib reader and writer reused
}

// appendFrame appends body (packet ID and data) to dst as one frame: plain
// when threshold is negative, else in the compressed framing, deflating body
// when it is threshold bytes or longer.
func (k *codec) appendFrame(dst, body []byte, threshold int) []byte {
	return k.comp.AppendFrame(dst, body, threshold)
}

// decodeFrame returns the packet body (ID and data) of a frame body received
// in the compressed framing with the given threshold, inflating it when it
// is compressed (see mc.Compressor.Inflate: one declared below the
// threshold or above maxLen is refused, and no buffer grows past maxLen).
// The result aliases frameBody or the codec's buffer, which is valid until
// the next call.
func (k *codec) decodeFrame(frameBody []byte, threshold, maxLen int) ([]byte, error) {
	body, err := k.comp.Inflate(frameBody, threshold, maxLen)
	if err != nil {
		return nil, fmt.Errorf("compressed frame: %w", err)
	}
	return body, nil
}
