package status

import (
	"errors"

	"github.com/tidegate/tidegate/protocol/mc"
)

// errUnexpectedPacket is a packet other than Status Request and Ping in
// the status state.
var errUnexpectedPacket = errors.New("unexpected packet in status state")

// Answer reads the status-state frames at the start of buf (a client's
// input after its handshake) and appends to out the answers: reply's
// response, in protocol version protocol, to each Status Request, and a
// Pong to the Ping, after which the exchange is over (pinged is true). It
// stops at an incomplete frame and at a Status Request while reply is nil
// (a refresh is awaited); consumed is how much of buf it answered. A frame
// that is bad or of another packet is an error, and out is then not to be
// sent.
func Answer(out, buf []byte, reply *Reply, protocol int32) (_ []byte, consumed int, pinged bool, err error) {
	for {
		n, hl, err := mc.SplitFrame(buf[consumed:], 256)
		if err != nil || n == 0 {
			return out, consumed, false, err
		}
		body := buf[consumed+hl : consumed+n]
		id, _, err := mc.ParsePacketID(body)
		if err != nil {
			return out, consumed, false, err
		}
		switch id {
		case mc.PacketStatusRequest:
			if reply == nil {
				return out, consumed, false, nil // answered when the refresh is done
			}
			out = reply.AppendResponse(out, protocol)
		case mc.PacketPing:
			v, err := mc.ParsePing(body)
			if err != nil {
				return out, consumed, false, err
			}
			return mc.AppendPong(out, v), consumed + n, true, nil
		default:
			return out, consumed, false, errUnexpectedPacket
		}
		consumed += n
	}
}
