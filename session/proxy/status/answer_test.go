package status

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// TestAnswer: a Status Request is answered with the reply and a Ping with
// its Pong, which ends the exchange; a request waits while there is no
// reply, an incomplete frame waits for more, and another packet is an
// error.
func TestAnswer(t *testing.T) {
	reply := Offline(config.OfflineStatusConfig{}, "off")
	request := mc.AppendPacket(nil, mc.PacketStatusRequest, nil)
	ping := mc.AppendPacket(nil, mc.PacketPing, binary.BigEndian.AppendUint64(nil, 42))
	in := append(append([]byte{}, request...), ping...)

	out, consumed, pinged, err := Answer(nil, in, reply, 47)
	want := mc.AppendPong(reply.AppendResponse(nil, 47), 42)
	if err != nil || !pinged || consumed != len(in) || !bytes.Equal(out, want) {
		t.Fatalf("request and ping: %q, consumed %d of %d, pinged %v, %v; want the response and the pong", out, consumed, len(in), pinged, err)
	}
	if out, consumed, pinged, err := Answer(nil, in, nil, 47); err != nil || pinged || consumed != 0 || len(out) != 0 {
		t.Fatalf("without a reply: %q, consumed %d, pinged %v, %v; want to wait at the request", out, consumed, pinged, err)
	}
	if out, consumed, pinged, err := Answer(nil, in[:len(in)-1], reply, 47); err != nil || pinged || consumed != len(request) || !bytes.Equal(out, reply.AppendResponse(nil, 47)) {
		t.Fatalf("ping cut short: %q, consumed %d, pinged %v, %v; want the response alone", out, consumed, pinged, err)
	}
	other := mc.AppendPacket(nil, 0x05, nil)
	if _, _, _, err := Answer(nil, other, reply, 47); !errors.Is(err, errUnexpectedPacket) {
		t.Fatalf("packet 0x05: %v, want %v", err, errUnexpectedPacket)
	}
}
