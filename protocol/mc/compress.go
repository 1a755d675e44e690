package mc

import (
	"bytes"
	"io"

	"github.com/klauspost/compress/zlib"
)

// Limits of a compressed frame's inflated size (its Data Length), as the
// vanilla game enforces them: the server refuses serverbound packets that
// inflate past 2^21 bytes, the client clientbound ones past 8 MiB.
const (
	MaxServerboundUncompressed = 1 << 21
	MaxClientboundUncompressed = MaxUncompressedLength
)

// maxKeptInflate is the largest inflate buffer a Compressor keeps between
// frames; one grown past it for a single large packet is dropped.
const maxKeptInflate = 256 << 10

// Compressor encodes and decodes frames in the compressed framing that
// follows Set Compression: VarInt frame length | VarInt data length |
// payload, data length 0 meaning the payload is the plain packet (ID and
// data), otherwise the payload is zlib and data length its inflated size.
// It uses klauspost/compress's zlib, about twice as fast as the standard
// library's on play frames (benchmarks/results/2026-12-02-reframe-zlib.md),
// its reader and writer reset, not made, per frame. Not safe for concurrent
// use; results alias its buffers until the next call. The zero value is
// ready.
type Compressor struct {
	zr       io.ReadCloser
	zw       *zlib.Writer
	src      bytes.Reader
	inflated []byte
	deflated bytes.Buffer
}

// AppendFrame appends packet (ID and data) to dst as one whole frame: plain
// when threshold is negative, else compressed framing, deflated when the
// packet is threshold bytes or longer.
func (c *Compressor) AppendFrame(dst, packet []byte, threshold int) []byte {
	if threshold < 0 {
		dst = AppendVarInt(dst, int32(len(packet)))
		return append(dst, packet...)
	}
	if len(packet) < threshold {
		dst = AppendVarInt(dst, int32(1+len(packet)))
		dst = append(dst, 0)
		return append(dst, packet...)
	}
	c.deflated.Reset()
	if c.zw == nil {
		c.zw = zlib.NewWriter(&c.deflated)
	} else {
		c.zw.Reset(&c.deflated)
	}
	_, _ = c.zw.Write(packet) // a bytes.Buffer does not fail
	_ = c.zw.Close()
	size := int32(len(packet))
	dst = AppendVarInt(dst, int32(VarIntLen(size)+c.deflated.Len()))
	dst = AppendVarInt(dst, size)
	dst = append(dst, c.deflated.Bytes()...)
	if c.deflated.Cap() > maxKeptInflate {
		c.deflated = bytes.Buffer{} // grown by one large packet: not kept
	}
	return dst
}

// Inflate returns the packet (ID and data) of frameBody, the body of a
// frame in the compressed framing, inflating it when its data length is
// not 0. A compressed packet declared smaller than threshold (as vanilla
// refuses) or larger than limit is refused before anything is inflated,
// one whose zlib stream runs past its declared size stops at limit+1 bytes
// at most: no buffer grows past the limit. Errors: ReasonBadCompression for
// the header, ReasonInflateTooLarge for a size past limit, ReasonBadInflate
// for a corrupt stream or one that does not inflate to its declared size.
// The result aliases frameBody or the Compressor's buffer.
func (c *Compressor) Inflate(frameBody []byte, threshold, limit int) ([]byte, error) {
	const packet = "compressed frame"
	dataLength, n, err := ParseCompressedHeader(frameBody)
	if err != nil {
		return nil, err
	}
	if dataLength == 0 {
		return frameBody[n:], nil
	}
	size := int(dataLength)
	if size > limit {
		return nil, packetError(packet, ReasonInflateTooLarge, kindTooLarge, "data length", int64(size), int64(limit))
	}
	if size < threshold {
		return nil, packetError(packet, ReasonBadCompression, kindTooSmall, "data length", int64(size), int64(threshold))
	}
	c.src.Reset(frameBody[n:])
	if c.zr == nil {
		c.zr, err = zlib.NewReader(&c.src)
	} else {
		err = c.zr.(zlib.Resetter).Reset(&c.src, nil)
	}
	if err != nil {
		return nil, packetError(packet, ReasonBadInflate, kindInvalid, "zlib header of a packet of", int64(size), 0)
	}
	if cap(c.inflated) > maxKeptInflate {
		c.inflated = nil
	}
	// Grow with what the stream yields, to one byte past the declared size
	// (which shows a stream that inflates to more than it says), so that a
	// small frame declaring a large size costs no large buffer.
	buf := c.inflated[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) > size {
				break
			}
			grown := make([]byte, len(buf), min(max(2*cap(buf), 512), size+1))
			copy(grown, buf)
			buf = grown
		}
		k, err := c.zr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			break
		}
		if err != nil {
			c.inflated = buf[:0]
			return nil, packetError(packet, ReasonBadInflate, kindInvalid, "zlib stream of a packet of", int64(size), 0)
		}
	}
	c.inflated = buf[:0]
	if len(buf) > size {
		return nil, packetError(packet, ReasonBadInflate, kindTooLarge, "inflated size", int64(len(buf)), int64(size))
	}
	if len(buf) < size {
		return nil, packetError(packet, ReasonBadInflate, kindTooSmall, "inflated size", int64(len(buf)), int64(size))
	}
	return buf, nil
}
