package mcbackend

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
)

var testSecret = []byte("backend-secret")

// forwardingDriver is a driver whose backend expects fw.
func forwardingDriver(fw Forwarding) *driver {
	d := newDriver(-1)
	cfg := *d.m.cfg
	cfg.forwarding, cfg.secret = fw, testSecret
	d.m.cfg = &cfg
	return d
}

// sentPackets splits what the machine sent (plain framing) into bodies.
func sentPackets(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		n, hl, err := mc.SplitFrame(b, 0)
		if err != nil || n == 0 {
			t.Fatalf("sent %x: not whole frames (%v)", b, err)
		}
		out = append(out, b[hl:n])
		b = b[n:]
	}
	return out
}

func TestVelocityForwardingVerified(t *testing.T) {
	d := forwardingDriver(ForwardVelocity)
	d.feed(append(handshake(764, "localhost", mc.NextStateLogin), mc.AppendPacket(nil, 0, loginStartData(764, "Alex"))...))
	ps := sentPackets(t, d.sent)
	req, err := mc.ParsePluginRequest(ps[0])
	if err != nil || len(ps) != 1 || string(req.Channel) != mc.VelocityChannel || !bytes.Equal(req.Data, []byte{4}) {
		t.Fatalf("sent %x: %+v, %v; want only the velocity request", d.sent, req, err)
	}
	uuid := [16]byte{1, 2, 3}
	info := mc.VelocityInfo{Version: 4, Address: []byte("192.0.2.1"), UUID: uuid, Name: []byte("Forwarded")}
	d.sent = nil
	d.feed(rawFrame(mc.AppendPluginResponse(nil, mc.PluginResponse{MessageID: req.MessageID, Successful: true,
		Data: mc.AppendVelocityResponse(nil, testSecret, info)})))
	if d.err != nil {
		t.Fatal(d.err)
	}
	ls, err := mc.ParseLoginSuccess(sentPackets(t, d.sent)[0], 764)
	if err != nil || ls.UUID != uuid || string(ls.Name) != "Forwarded" || d.m.counters.forwarded.Load() != 1 {
		t.Fatalf("Login Success %+v, %v; want the forwarded player", ls, err)
	}
}

func TestForwardingRefusals(t *testing.T) {
	login := func(addr string) []byte {
		return append(handshake(764, addr, mc.NextStateLogin), mc.AppendPacket(nil, 0, loginStartData(764, "Alex"))...)
	}
	signed := func(secret []byte) []byte {
		return rawFrame(mc.AppendPluginResponse(nil, mc.PluginResponse{MessageID: velocityMessageID, Successful: true,
			Data: mc.AppendVelocityResponse(nil, secret, mc.VelocityInfo{Version: 1, Name: []byte("Alex")})}))
	}
	for _, tc := range []struct {
		name  string
		fw    Forwarding
		input []byte
		says  string
	}{
		{"wrong secret", ForwardVelocity, append(login("localhost"), signed([]byte("other"))...), "Unable to verify player details"},
		{"not understood", ForwardVelocity, append(login("localhost"), rawFrame(mc.AppendPluginResponse(nil, mc.PluginResponse{MessageID: velocityMessageID}))...), "connect with Velocity"},
		{"wrong message id", ForwardVelocity, append(login("localhost"), rawFrame(mc.AppendPluginResponse(nil, mc.PluginResponse{MessageID: 7, Successful: true}))...), "Unable to verify"},
		{"truncated signature", ForwardVelocity, append(login("localhost"), rawFrame(mc.AppendPluginResponse(nil, mc.PluginResponse{MessageID: velocityMessageID, Successful: true, Data: []byte{1, 2}}))...), "Unable to verify"},
		{"login start instead", ForwardVelocity, append(login("localhost"), mc.AppendPacket(nil, 0, loginStartData(764, "Alex"))...), "Unable to verify"},
		{"no bungeecord address", ForwardBungeeCord, login("localhost"), "enable it in your BungeeCord config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := forwardingDriver(tc.fw)
			d.feed(tc.input)
			if reasonOf(d.err) != ReasonBadForwarding || d.err == nil {
				t.Fatalf("error %v, want bad_forwarding", d.err)
			}
			ps := sentPackets(t, d.sent)
			reason, err := mc.ParseLoginDisconnect(ps[len(ps)-1])
			if err != nil || !strings.Contains(string(reason), tc.says) {
				t.Fatalf("last packet %x (%v), want a disconnect saying %q", ps[len(ps)-1], err, tc.says)
			}
		})
	}
	d := forwardingDriver(ForwardBungeeCord)
	uuid := [16]byte{9, 8, 7}
	d.feed(login(string(mc.AppendBungeeAddress(nil, []byte("localhost"), "192.0.2.1", uuid, nil))))
	if ls, err := mc.ParseLoginSuccess(sentPackets(t, d.sent)[0], 764); d.err != nil || err != nil || ls.UUID != uuid {
		t.Fatalf("bungeecord login: %v, %+v, %v; want the forwarded UUID", d.err, ls, err)
	}
}

func TestParseForwarding(t *testing.T) {
	for s, want := range map[string]Forwarding{"": ForwardNone, "none": ForwardNone, "bungeecord": ForwardBungeeCord, "velocity": ForwardVelocity} {
		if got, err := ParseForwarding(s); err != nil || got != want {
			t.Errorf("ParseForwarding(%q) = %d, %v", s, got, err)
		}
	}
	if _, err := ParseForwarding("modern"); err == nil {
		t.Error("modern accepted")
	}
	if _, err := New(Config{Forwarding: ForwardVelocity}); err == nil || !strings.Contains(err.Error(), "secret") {
		t.Errorf("velocity without a secret: %v", err)
	}
}
