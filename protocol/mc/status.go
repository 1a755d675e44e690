package mc

import "encoding/binary"

// Status state packet IDs.
const (
	PacketStatusRequest  = 0x00 // serverbound, empty
	PacketStatusResponse = 0x00 // clientbound: JSON string
	PacketPing           = 0x01 // serverbound: int64 payload
	PacketPong           = 0x01 // clientbound: the ping's payload
)

// AppendStatusResponse appends a whole Status Response frame carrying json
// to dst and returns the extended slice.
func AppendStatusResponse(dst []byte, json []byte) []byte {
	return appendStringPacket(dst, PacketStatusResponse, json)
}

// ParsePing decodes the payload of a status Ping frame body (packet ID 0x01
// and an int64). Violations are reported with ReasonBadPing.
func ParsePing(body []byte) (int64, error) {
	const packet = "ping"
	r := NewReader(body)
	id, err := r.ReadVarInt()
	if err != nil {
		return 0, relabel(err, packet, ReasonBadPing)
	}
	if id != PacketPing {
		return 0, packetError(packet, ReasonBadPing, kindUnexpected, "packet id", int64(id), PacketPing)
	}
	v, err := r.ReadInt64()
	if err != nil {
		return 0, relabel(err, packet, ReasonBadPing)
	}
	if n := r.Remaining(); n != 0 {
		return 0, packetError(packet, ReasonBadPing, kindTrailing, "payload", int64(n), 0)
	}
	return v, nil
}

// AppendPong appends a whole Pong frame echoing payload to dst and returns
// the extended slice.
func AppendPong(dst []byte, payload int64) []byte {
	dst = append(dst, 9, PacketPong)
	return binary.BigEndian.AppendUint64(dst, uint64(payload))
}
