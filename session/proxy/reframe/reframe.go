package reframe

import (
	"errors"
	"fmt"

	"github.com/tidegate/tidegate/protocol/mc"
)

// Off is the threshold of a side that does not compress: one that was
// never sent Set Compression, or sent a negative threshold.
const Off = -1

// FlushAt is the output size at which Convert returns before the input
// is used up, so that its caller writes the batch and checks flow control
// before inflating more: without it a read of small frames that inflate
// large would queue all their inflated bytes at once.
const FlushAt = 64 << 10

// maxKeptOut is the largest output buffer a Codec keeps between calls;
// one grown past it by a single large packet is dropped.
const maxKeptOut = 256 << 10

// ErrTooLarge is the error, wrapped, of a packet that cannot be framed for
// the writing side: over mc.MaxFrameLength uncompressed to a side that
// does not compress, or deflating to more than a frame holds.
var ErrTooLarge = errors.New("packet too large for the other side's framing")

// Direction is one direction of a re-framed session: the thresholds of
// the side it reads and of the side it writes (Off, or negative, for no
// compression) and the largest inflated packet the reading side may send.
type Direction struct {
	From, To int32
	Limit    int32
}

// Serverbound returns the Direction from a client told threshold client
// to a backend compressing at backend (Off for either: no compression),
// limited as a vanilla server limits what it inflates.
func Serverbound(client, backend int) Direction {
	return Direction{From: norm(client), To: norm(backend), Limit: mc.MaxServerboundUncompressed}
}

// Clientbound returns the Direction from a backend compressing at backend
// to a client told client, limited as a vanilla client limits it.
func Clientbound(backend, client int) Direction {
	return Direction{From: norm(backend), To: norm(client), Limit: mc.MaxClientboundUncompressed}
}

func norm(threshold int) int32 { return int32(max(threshold, Off)) }

// Same reports whether d's two sides frame alike, so that its frames pass
// unchanged and need no Codec.
func (d Direction) Same() bool { return d.From == d.To }

// Pair is a session's two Directions.
type Pair struct{ C2S, S2C Direction }

// NewPair returns the Pair of a session whose client is told threshold
// client and whose backend compresses at backend (Off for either: none).
func NewPair(client, backend int) Pair {
	return Pair{C2S: Serverbound(client, backend), S2C: Clientbound(backend, client)}
}

// Same reports whether both directions pass frames unchanged.
func (p Pair) Same() bool { return p.C2S.Same() }

// Codec re-frames frames; it is one loop's scratch (see the package
// comment). Not safe for concurrent use. The zero value is ready.
type Codec struct {
	zlib mc.Compressor
	out  []byte
}

// Convert re-frames the whole frames at the start of in from d.From's
// format to d.To's, until no whole frame is left or the output reaches
// FlushAt bytes, and returns the output (valid until the next call) and
// the bytes of in it consumed; empty frames are dropped, as vanilla skips
// them. With dec not nil the source is encrypted: each frame is decrypted
// in place as it is consumed, in[:consumed] is then clear, and in[consumed:]
// is left as it was, ciphertext, with dec standing at its start.
//
// An error leaves out holding the frames converted before the bad one, to
// deliver; consumed then includes the bad frame. Errors: mc's
// ReasonInflateTooLarge for a packet declared past d.Limit,
// ReasonBadCompression and ReasonBadInflate for a malformed header or
// zlib stream (see mc.Compressor.Inflate), ReasonVarIntTooLong for a
// frame length over 3 bytes, and ErrTooLarge.
func (c *Codec) Convert(in []byte, d Direction, dec *mc.CFB8) (out []byte, consumed int, err error) {
	out = c.out[:0]
	if cap(out) > maxKeptOut {
		out = nil
	}
	defer func() { c.out = out[:0] }()
	for len(out) < FlushAt {
		frameLen, hl, err := split(in[consumed:], dec)
		if err != nil {
			return out, len(in), err
		}
		if frameLen == 0 {
			return out, consumed, nil
		}
		frame := in[consumed : consumed+frameLen]
		consumed += frameLen
		if out, err = c.appendFrame(out, frame, hl, d); err != nil {
			return out, consumed, err
		}
	}
	return out, consumed, nil
}

// split returns the size of the whole frame at the start of b and of its
// length prefix, 0 when b holds no whole frame. With dec, the frame is
// decrypted in place; a frame not all in b is not, and the prefix bytes
// decrypted to learn that are taken back.
func split(b []byte, dec *mc.CFB8) (frameLen, hl int, err error) {
	if dec == nil {
		return mc.SplitFrame(b, mc.MaxFrameLength)
	}
	reg := dec.Register()
	var hdr [mc.MaxFrameHeaderLen]byte
	length := 0
	for hl < len(b) {
		if hl == mc.MaxFrameHeaderLen {
			return 0, 0, fmt.Errorf("frame length prefix of more than %d bytes: %w", mc.MaxFrameHeaderLen, mc.ErrVarIntTooLong)
		}
		dec.XORKeyStream(hdr[hl:hl+1], b[hl:hl+1])
		c := hdr[hl]
		length |= int(c&0x7f) << (7 * hl)
		hl++
		if c < 0x80 {
			if hl+length > len(b) {
				break // the body is still to come
			}
			copy(b, hdr[:hl])
			body := b[hl : hl+length]
			dec.XORKeyStream(body, body)
			return hl + length, hl, nil
		}
	}
	if hl == mc.MaxFrameHeaderLen && hdr[hl-1] >= 0x80 {
		return 0, 0, fmt.Errorf("frame length prefix of more than %d bytes: %w", mc.MaxFrameHeaderLen, mc.ErrVarIntTooLong)
	}
	dec.SetRegister(reg)
	return 0, 0, nil
}

// appendFrame appends frame (its length prefix hl bytes), in d.From's
// format, to out in d.To's.
func (c *Codec) appendFrame(out, frame []byte, hl int, d Direction) ([]byte, error) {
	body := frame[hl:]
	if len(body) == 0 {
		return out, nil
	}
	if d.From < 0 {
		return c.appendPacket(out, body, d.To)
	}
	// The limit first: a data length past it is what an inflate bomb
	// declares, whatever else is wrong with the frame.
	if dataLength, _, err := mc.ReadVarInt(body); err == nil && dataLength > d.Limit {
		return out, fmt.Errorf("compressed frame declares a packet of %d bytes, the limit is %d: %w", dataLength, d.Limit, mc.ErrInflateTooLarge)
	}
	dataLength, _, err := mc.ParseCompressedHeader(body)
	if err != nil {
		return out, err
	}
	packet, err := c.zlib.Inflate(body, int(d.From), int(d.Limit))
	if err != nil {
		return out, err
	}
	if d.To >= 0 && (dataLength != 0) == (len(packet) >= int(d.To)) {
		return append(out, frame...), nil // already as the other side frames it
	}
	return c.appendPacket(out, packet, d.To)
}

// appendPacket appends packet (ID and data) to out as one frame at
// threshold to.
func (c *Codec) appendPacket(out, packet []byte, to int32) ([]byte, error) {
	if to < 0 && len(packet) > mc.MaxFrameLength {
		return out, fmt.Errorf("packet of %d bytes to a side without compression, frames hold %d: %w", len(packet), mc.MaxFrameLength, ErrTooLarge)
	}
	start := len(out)
	out = c.zlib.AppendFrame(out, packet, int(to))
	// A body over MaxFrameLength takes a 4-byte prefix: the frame is then
	// longer than the longest body with the longest prefix.
	if n := len(out) - start; n > mc.MaxFrameLength+mc.MaxFrameHeaderLen {
		return out[:start], fmt.Errorf("packet of %d bytes deflates to a frame of %d bytes, frames hold %d: %w", len(packet), n, mc.MaxFrameLength, ErrTooLarge)
	}
	return out, nil
}
