package push

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Legacy TCP framing constants (see the package documentation).
const (
	// ProtocolVersion is the first byte of every legacy frame after the length prefix.
	ProtocolVersion = 0x01
	// FrameLenSize is the size of the length prefix of a legacy frame.
	FrameLenSize = 4
	// EventHeaderLen is the size of an encoded event's header: u32 length and op.
	EventHeaderLen = 5
	// DefaultMaxFrame is the largest legacy frame a decoder accepts by
	// default (Mantis' limit: 5 MiB).
	DefaultMaxFrame = 5 << 20
)

// Ops of legacy events.
const (
	OpNext         = 1 // an event
	OpError        = 2 // a stream error (not sent by tidegate)
	OpCompleted    = 3 // the stream completed (not sent by tidegate)
	OpSubscribed   = 4 // the subscription is registered
	OpUnsubscribed = 5 // the subscription ended (not sent by tidegate)
	OpHeartbeat    = 6 // nothing was written for the heartbeat period
	OpNonDataError = 7 // an out-of-band report, e.g. dropped events
)

// PutEventHeader writes the header of an event with op and a payload of
// payloadLen bytes into dst[:EventHeaderLen].
func PutEventHeader(dst []byte, op byte, payloadLen int) {
	binary.BigEndian.PutUint32(dst, uint32(1+payloadLen))
	dst[4] = op
}

// AppendEvent appends an encoded event to dst.
func AppendEvent(dst []byte, op byte, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(1+len(payload)))
	dst = append(dst, op)
	return append(dst, payload...)
}

// FrameHeaderLen returns the size of a frame's header for a topic of
// topicLen bytes: the length prefix, the version and the name.
func FrameHeaderLen(topicLen int) int { return FrameLenSize + 2 + topicLen }

// PutFrameHeader writes the header of a frame whose encoded events total
// eventsLen bytes into dst[:FrameHeaderLen(len(topic))].
func PutFrameHeader(dst, topic []byte, eventsLen int) {
	binary.BigEndian.PutUint32(dst, uint32(2+len(topic)+eventsLen))
	dst[4] = ProtocolVersion
	dst[5] = byte(len(topic))
	copy(dst[6:], topic)
}

// AppendFrame appends a whole frame carrying the already encoded events
// (each made by AppendEvent), concatenated, to dst. It is the plain
// reference encoding.
func AppendFrame(dst, topic []byte, encodedEvents ...[]byte) []byte {
	n := 0
	for _, e := range encodedEvents {
		n += len(e)
	}
	off := len(dst)
	dst = append(dst, make([]byte, FrameHeaderLen(len(topic)))...)
	PutFrameHeader(dst[off:], topic, n)
	for _, e := range encodedEvents {
		dst = append(dst, e...)
	}
	return dst
}

// ErrIncomplete means more bytes are needed to decode.
var ErrIncomplete = errors.New("push: incomplete input")

// Frame is a decoded legacy frame; its fields alias the input.
type Frame struct {
	// Topic is the frame's name field.
	Topic []byte
	// Events are the encoded events; walk them with NextEvent.
	Events []byte
}

// DecodeFrame decodes the legacy frame at the start of b. It returns the
// frame and its total size, ErrIncomplete when b holds only part of it, or an
// error for a frame longer than maxFrame (length prefix excluded), a wrong
// version or a name that does not fit.
func DecodeFrame(b []byte, maxFrame int) (Frame, int, error) {
	if len(b) < FrameLenSize {
		return Frame{}, 0, ErrIncomplete
	}
	n := binary.BigEndian.Uint32(b)
	if int64(n) > int64(maxFrame) {
		return Frame{}, 0, fmt.Errorf("push: legacy frame of %d bytes exceeds %d", n, maxFrame)
	}
	if n < 2 {
		return Frame{}, 0, fmt.Errorf("push: legacy frame of %d bytes is shorter than its header", n)
	}
	if len(b) < FrameLenSize+int(n) {
		return Frame{}, 0, ErrIncomplete
	}
	body := b[FrameLenSize : FrameLenSize+int(n)]
	if body[0] != ProtocolVersion {
		return Frame{}, 0, fmt.Errorf("push: legacy frame version 0x%02x, want 0x%02x", body[0], ProtocolVersion)
	}
	nl := int(body[1])
	if nl > MaxTopicLen || 2+nl > len(body) {
		return Frame{}, 0, fmt.Errorf("push: legacy frame name of %d bytes does not fit a %d-byte frame", nl, n)
	}
	return Frame{Topic: body[2 : 2+nl], Events: body[2+nl:]}, FrameLenSize + int(n), nil
}

// NextEvent decodes the first event of events (a Frame's Events) and
// returns its op, its payload (aliasing events) and the remaining events.
func NextEvent(events []byte) (op byte, payload, rest []byte, err error) {
	if len(events) < EventHeaderLen {
		return 0, nil, nil, fmt.Errorf("push: legacy event header truncated: %d bytes", len(events))
	}
	n := binary.BigEndian.Uint32(events)
	if n < 1 || int64(n) > int64(len(events)-4) {
		return 0, nil, nil, fmt.Errorf("push: legacy event length %d does not fit %d bytes", n, len(events)-4)
	}
	return events[4], events[5 : 4+n], events[4+n:], nil
}
