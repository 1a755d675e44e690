package move

import (
	"errors"
	"fmt"

	"github.com/tidegate/tidegate/protocol/mc"
)

// maxInspected is the largest declared inflated size of a compressed frame
// whose packet ID PacketID reads: every packet a move looks for is a few
// bytes, so a larger one is none of them and is not inflated.
const maxInspected = 64

// Other is PacketID's answer for a compressed frame too large to be any
// packet a move looks for.
const Other = -1

// PacketID returns the packet ID of a frame body (after its length
// prefix) in a stream compressed at threshold (-1: not compressed). A
// compressed packet is inflated only when it declares at most
// maxInspected bytes; a larger one is Other. k is the loop's scratch
// compressor; nothing is allocated but what inflating a small deflated
// packet costs the standard library's zlib reader.
func PacketID(body []byte, threshold int, k *mc.Compressor) (int32, error) {
	if threshold >= 0 {
		size, _, err := mc.ParseCompressedHeader(body)
		if err != nil {
			return 0, err
		}
		if size > maxInspected {
			return Other, nil
		}
		if body, err = k.Inflate(body, threshold, maxInspected); err != nil {
			return 0, err
		}
	}
	id, n, err := mc.ReadVarInt(body)
	if err == nil && n == 0 {
		err = errors.New("the packet ends before its ID")
	}
	if err != nil {
		return 0, fmt.Errorf("packet id of a %d-byte frame: %w", len(body), err)
	}
	return id, nil
}

// toBoundary advances fc over the start of b to the end of the frame it is
// in, and returns how many bytes of b that took and whether fc now stands
// between frames (false: the frame goes on after b).
func toBoundary(fc *mc.FrameCounter, b []byte) (int, bool) {
	n := 0
	for {
		p := fc.Position()
		if p.Broken {
			return n, false
		}
		if p.Shift == 0 && p.Remaining == 0 {
			return n, true
		}
		if n == len(b) {
			return n, false
		}
		k := 1 // a length prefix, a byte at a time
		if p.Shift == 0 {
			k = min(p.Remaining, len(b)-n)
		}
		fc.Count(b[n : n+k])
		n += k
	}
}
