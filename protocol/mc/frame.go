package mc

const (
	// MaxFrameLength is the largest frame body length the protocol allows:
	// the length prefix is limited to MaxFrameHeaderLen bytes, 2^21-1.
	MaxFrameLength = 1<<21 - 1

	// MaxFrameHeaderLen is the maximum length of a frame's length prefix.
	MaxFrameHeaderLen = 3

	// MaxUncompressedLength is the largest inflated size a compressed frame
	// may declare (the vanilla limit, 8 MiB).
	MaxUncompressedLength = 8 << 20
)

// SplitFrame inspects buffered stream bytes and reports the size of the next
// whole frame. A frame is a VarInt body length followed by the body (packet
// ID and data, or a compressed-frame header and payload after Set
// Compression).
//
// When b holds a whole frame, SplitFrame returns its total size frameLen
// (header plus body) and the size of the header, so the body is
// b[headerLen:frameLen]. When b holds only part of a frame it returns
// 0, 0, nil and the caller should wait for more bytes. A frame with an empty
// body is valid and returned with frameLen == headerLen; vanilla-compatible
// proxies skip such frames.
//
// maxLen bounds the body length; values outside 1..MaxFrameLength mean
// MaxFrameLength. A length prefix longer than MaxFrameHeaderLen bytes
// yields a ReasonVarIntTooLong error and a body length above maxLen a
// ReasonFrameTooLarge error; both are reported as soon as the offending
// header bytes are buffered.
func SplitFrame(b []byte, maxLen int) (frameLen int, headerLen int, err error) {
	if maxLen <= 0 || maxLen > MaxFrameLength {
		maxLen = MaxFrameLength
	}
	var length int
	for i := 0; ; i++ {
		if i == MaxFrameHeaderLen {
			return 0, 0, newError(ReasonVarIntTooLong, kindTooLong, "frame length varint", 0, MaxFrameHeaderLen)
		}
		if i >= len(b) {
			return 0, 0, nil
		}
		c := b[i]
		length |= int(c&0x7f) << (7 * i)
		if c < 0x80 {
			headerLen = i + 1
			break
		}
	}
	if length > maxLen {
		return 0, 0, newError(ReasonFrameTooLarge, kindTooLarge, "frame length", int64(length), int64(maxLen))
	}
	frameLen = headerLen + length
	if len(b) < frameLen {
		return 0, 0, nil
	}
	return frameLen, headerLen, nil
}

// AppendPacket appends a whole uncompressed frame holding packet id and data
// to dst and returns the extended slice. The caller keeps the body within
// MaxFrameLength.
func AppendPacket(dst []byte, id int32, data []byte) []byte {
	dst = AppendVarInt(dst, int32(VarIntLen(id)+len(data)))
	dst = AppendVarInt(dst, id)
	return append(dst, data...)
}

// AppendString appends s in protocol string form, a VarInt byte length and
// the bytes, to dst and returns the extended slice.
func AppendString(dst []byte, s []byte) []byte {
	dst = AppendVarInt(dst, int32(len(s)))
	return append(dst, s...)
}

// appendStringPacket appends a whole frame whose data is the single string s.
func appendStringPacket(dst []byte, id int32, s []byte) []byte {
	n := VarIntLen(id) + VarIntLen(int32(len(s))) + len(s)
	dst = AppendVarInt(dst, int32(n))
	dst = AppendVarInt(dst, id)
	return AppendString(dst, s)
}

// ParsePacketID splits a frame body into its packet ID and data. data
// aliases body.
func ParsePacketID(body []byte) (id int32, data []byte, err error) {
	id, n, err := ReadVarInt(body)
	if err != nil {
		return 0, nil, err
	}
	if n == 0 {
		return 0, nil, newError(ReasonTruncated, kindTruncated, "packet id", int64(len(body)), int64(len(body)+1))
	}
	return id, body[n:], nil
}

// ParseCompressedHeader reads the header of a frame body sent after Set
// Compression: a VarInt data length that is 0 when the rest of the body,
// body[n:], is an uncompressed packet ID and data, and otherwise the
// inflated size of the zlib stream in body[n:]. It rejects negative lengths
// and lengths above MaxUncompressedLength with ReasonBadCompression. Checking
// a non-zero dataLength against the negotiated threshold is left to the
// caller.
func ParseCompressedHeader(frameBody []byte) (dataLength int32, n int, err error) {
	const packet = "compressed frame"
	dataLength, n, err = ReadVarInt(frameBody)
	switch {
	case err != nil:
		return 0, 0, relabel(err, packet, ReasonBadCompression)
	case n == 0:
		return 0, 0, packetError(packet, ReasonBadCompression, kindTruncated, "data length", int64(len(frameBody)), int64(len(frameBody)+1))
	case dataLength < 0:
		return 0, 0, packetError(packet, ReasonBadCompression, kindTooSmall, "data length", int64(dataLength), 0)
	case dataLength > MaxUncompressedLength:
		return 0, 0, packetError(packet, ReasonBadCompression, kindTooLarge, "data length", int64(dataLength), MaxUncompressedLength)
	}
	return dataLength, n, nil
}
