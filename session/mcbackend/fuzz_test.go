package mcbackend

import (
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
)

// FuzzMachine feeds arbitrary input, cut into chunks of a fuzzed size, to a
// connection's state machine under each compression setting, and, from
// mode 3 on, each forwarding (so the velocity answer is decoded). It checks that
// no input panics, that every consumed byte is accounted for and that the
// output is bounded by the input: the echo plus at most one login's worth
// of answers.
func FuzzMachine(f *testing.F) {
	s1710, _ := session1710()
	s764, _ := session764(-1)
	s764c, _ := session764(64)
	s764z, _ := session764(0)
	status := append(handshake(765, "h", 1), mc.AppendPacket(nil, 0, nil)...)
	status = mc.AppendPacket(status, 1, make([]byte, 8))
	for _, seed := range []struct {
		mode  uint8
		chunk uint8
		in    []byte
	}{
		{0, 0, s1710}, {0, 1, s1710}, {0, 7, s764}, {1, 0, s764c}, {1, 3, s764c}, {2, 0, s764z},
		{0, 0, status}, {0, 0, []byte{0xFE, 0x01}}, {0, 0, []byte{0xFF, 0xFF, 0xFF, 0xFF}},
		{3, 0, append(append(handshake(764, "h", 2), mc.AppendPacket(nil, 0, loginStartData(764, "Alex"))...), rawFrame(mc.AppendPluginResponse(nil, mc.PluginResponse{MessageID: 1, Successful: true,
			Data: mc.AppendVelocityResponse(nil, testSecret, mc.VelocityInfo{Version: 4, Name: []byte("Alex")})}))...)},
	} {
		f.Add(seed.mode, seed.chunk, seed.in)
	}
	thresholds := [...]int{-1, 64, 0}
	f.Fuzz(func(t *testing.T, mode, chunk uint8, in []byte) {
		d := newDriver(thresholds[int(mode)%len(thresholds)])
		if fw := Forwarding(mode / 3 % 3); fw != ForwardNone {
			cfg := *d.m.cfg
			cfg.forwarding, cfg.secret = fw, testSecret
			d.m.cfg = &cfg
		}
		step := int(chunk)
		if step == 0 {
			step = len(in) + 1
		}
		for i := 0; i < len(in); i += step {
			d.feed(in[i:min(i+step, len(in))])
		}
		if len(d.sent) > d.echo+4096 {
			t.Fatalf("%d bytes of input made %d bytes of output, %d of them echo", len(in), len(d.sent), d.echo)
		}
		if d.echo > len(in) {
			t.Fatalf("echoed %d bytes of %d", d.echo, len(in))
		}
	})
}

// FuzzDecodeFrame decodes arbitrary compressed frame bodies; the output may
// never exceed the limit.
func FuzzDecodeFrame(f *testing.F) {
	var k codec
	body := append([]byte{0x03}, make([]byte, 500)...)
	frame := k.appendFrame(nil, body, 64)
	_, hn, _ := mc.ReadVarInt(frame)
	f.Add(append([]byte(nil), frame[hn:]...))
	f.Add([]byte{0x00, 0x03, 0x01})
	f.Add([]byte{0x80, 0x80, 0x04, 0x78, 0x9c})
	f.Fuzz(func(t *testing.T, in []byte) {
		const limit = 4096
		out, err := k.decodeFrame(in, 64, limit)
		if err == nil && len(out) > max(limit, len(in)) {
			t.Fatalf("decoded %d bytes from %d, limit %d", len(out), len(in), limit)
		}
	})
}
