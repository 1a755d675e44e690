package mcbackend

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"

	"github.com/tidegate/tidegate/protocol/mc"
)

// maxKeptInflateBuffer is the largest inflate buffer a loop keeps between
// packets; a larger one, grown for one big packet, is dropped.
const maxKeptInflateBuffer = 256 << 10

// codec holds one loop's scratch space for building and decoding packets:
// nothing in it survives a callback, so all connections of a loop share it.
type codec struct {
	packet []byte // a packet body (ID and data) being built
	frame  []byte // a whole frame being built

	deflated bytes.Buffer
	zw       *zlib.Writer

	compressed bytes.Reader
	zr         io.ReadCloser // a zlib reader, reused through zlib.Resetter
	inflated   bytes.Buffer
}

// appendFrame appends body (packet ID and data) to dst as one frame: plain
// when threshold is negative, else in the compressed framing, deflating body
// when it is threshold bytes or longer.
func (k *codec) appendFrame(dst, body []byte, threshold int) []byte {
	if threshold < 0 {
		dst = mc.AppendVarInt(dst, int32(len(body)))
		return append(dst, body...)
	}
	if len(body) < threshold {
		dst = mc.AppendVarInt(dst, int32(1+len(body)))
		dst = append(dst, 0) // data length 0: not compressed
		return append(dst, body...)
	}
	k.deflated.Reset()
	if k.zw == nil {
		k.zw = zlib.NewWriter(&k.deflated)
	} else {
		k.zw.Reset(&k.deflated)
	}
	// Writes to a bytes.Buffer cannot fail.
	_, _ = k.zw.Write(body)
	_ = k.zw.Close()
	size := int32(len(body))
	dst = mc.AppendVarInt(dst, int32(mc.VarIntLen(size)+k.deflated.Len()))
	dst = mc.AppendVarInt(dst, size)
	return append(dst, k.deflated.Bytes()...)
}

// decodeFrame returns the packet body (ID and data) of a frame body received
// in the compressed framing with the given threshold, inflating it when it
// is compressed. The result aliases frameBody or the codec's buffer, which
// is valid until the next call. Inflated packets may be at most maxLen bytes.
func (k *codec) decodeFrame(frameBody []byte, threshold, maxLen int) ([]byte, error) {
	dataLength, n, err := mc.ParseCompressedHeader(frameBody)
	if err != nil {
		return nil, fmt.Errorf("compressed frame header: %w", err)
	}
	if dataLength == 0 {
		return frameBody[n:], nil
	}
	if int(dataLength) < threshold {
		return nil, fmt.Errorf("compressed packet of %d bytes is below the threshold %d", dataLength, threshold)
	}
	if int(dataLength) > maxLen {
		return nil, fmt.Errorf("compressed packet of %d bytes exceeds the limit %d", dataLength, maxLen)
	}
	k.compressed.Reset(frameBody[n:])
	if k.zr == nil {
		k.zr, err = zlib.NewReader(&k.compressed)
	} else {
		err = k.zr.(zlib.Resetter).Reset(&k.compressed, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("zlib stream of a %d-byte packet: %w", dataLength, err)
	}
	if k.inflated.Cap() > maxKeptInflateBuffer {
		k.inflated = bytes.Buffer{}
	}
	k.inflated.Reset()
	// Read one byte past the declared size to catch streams that inflate
	// to more than they declare, without ever holding more than that.
	got, err := k.inflated.ReadFrom(io.LimitReader(k.zr, int64(dataLength)+1))
	if err != nil {
		return nil, fmt.Errorf("inflating a %d-byte packet: %w", dataLength, err)
	}
	if got > int64(dataLength) {
		return nil, fmt.Errorf("compressed packet inflates past its declared %d bytes", dataLength)
	}
	if got < int64(dataLength) {
		return nil, fmt.Errorf("compressed packet inflates to %d bytes, declared %d", got, dataLength)
	}
	return k.inflated.Bytes(), nil
}
