package login

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/testbytes"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcauth"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

var secret = []byte("test-secret")

func velocitySettings() *Settings {
	return &Settings{Forwarding: config.ForwardVelocity, Secret: secret, FollowBackend: true}
}

func newTestBackend(t testing.TB, set *Settings, v int32) *Backend {
	t.Helper()
	ls := mc.AppendLoginStart(nil, v, mc.LoginStart{Name: []byte("Alex"), HasUUID: v >= mc.ProtocolLoginUUID})
	b, err := NewBackend(set, v, ls, "192.0.2.7")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// frames joins packets as frames in the framing of threshold (-1 plain).
func frames(threshold int, packets ...[]byte) []byte {
	return testbytes.MCFrames(threshold, packets...)
}

func TestVelocityLogin(t *testing.T) {
	for _, v := range []int32{mc.Protocol1_13, 340 + 100, mc.Protocol1_19, mc.ProtocolLoginUUIDOptional, 763, 764, 766, 768} {
		var k mc.Compressor
		b := newTestBackend(t, velocitySettings(), v)
		req := mc.AppendPluginRequest(nil, mc.PluginRequest{MessageID: 9, Channel: []byte(mc.VelocityChannel), Data: []byte{4}})
		success := mc.AppendLoginSuccess(nil, v, mc.LoginSuccess{UUID: b.UUID(), Name: []byte("Alex")})
		// The request plain, then Set Compression, then Login Success
		// compressed and a first play packet, in one read cut inside Login
		// Success.
		head := frames(-1, req, mc.AppendSetCompression(nil, 16))
		in := append(bytes.Clone(head), frames(16, success, []byte{0x26, 1, 2, 3})...)
		n, toBackend, toClient, err := b.Feed(in[:len(head)+2], &k)
		if err != nil || toClient != nil {
			t.Fatalf("v%d: first part: %v, client %x", v, err, toClient)
		}
		fl, hl, _ := mc.SplitFrame(toBackend, mc.MaxFrameLength)
		resp, err := mc.ParsePluginResponse(toBackend[hl:fl])
		if err != nil || !resp.Successful || resp.MessageID != 9 {
			t.Fatalf("v%d: answer %+v, %v", v, resp, err)
		}
		info, err := mc.VerifyVelocityResponse(resp.Data, secret, 4)
		if err != nil || string(info.Name) != "Alex" || string(info.Address) != "192.0.2.7" || info.UUID != mc.OfflineUUID([]byte("Alex")) {
			t.Fatalf("v%d: forwarded %+v, %v", v, info, err)
		}
		in = in[n:]
		n, _, toClient, err = b.Feed(in, &k)
		if err != nil || toClient == nil {
			t.Fatalf("v%d: Login Success not taken: %v", v, err)
		}
		if rest := in[n:]; !bytes.Equal(rest, frames(16, []byte{0x26, 1, 2, 3})) {
			t.Fatalf("v%d: left %x for the relay", v, rest)
		}
		// The client: Set Compression 16 plain, then Login Success compressed.
		fl, hl, _ = mc.SplitFrame(toClient, mc.MaxFrameLength)
		if th, err := mc.ParseSetCompression(toClient[hl:fl]); err != nil || th != 16 {
			t.Fatalf("v%d: client Set Compression %d, %v", v, th, err)
		}
		rest := toClient[fl:]
		fl, hl, _ = mc.SplitFrame(rest, mc.MaxFrameLength)
		body, err := k.Inflate(rest[hl:fl], 16, mc.MaxClientboundUncompressed)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := mc.ParseLoginSuccess(body, v)
		if err != nil || ls.UUID != b.UUID() || string(ls.Name) != "Alex" || fl != len(rest) {
			t.Fatalf("v%d: client Login Success %+v, %v", v, ls, err)
		}
	}
}

// TestPlainLoginWithoutCompression: a move's login (Again) answers a
// request on another channel than velocity's as not understood (the first
// login relays it: TestPluginRequestsRelayed).
func TestPlainLoginWithoutCompression(t *testing.T) {
	for _, v := range []int32{mc.Protocol1_7_10, 47, 764} {
		var k mc.Compressor
		set := &Settings{Forwarding: config.ForwardBungeeCord, FollowBackend: true}
		b := newTestBackend(t, set, v).Again(set)
		other := mc.AppendPluginRequest(nil, mc.PluginRequest{MessageID: 3, Channel: []byte("fabric:hello")})
		in := frames(-1, other, mc.AppendLoginSuccess(nil, v, mc.LoginSuccess{UUID: b.UUID(), Name: []byte("Alex")}))
		if v < mc.Protocol1_13 {
			in = frames(-1, mc.AppendLoginSuccess(nil, v, mc.LoginSuccess{UUID: b.UUID(), Name: []byte("Alex")}))
		}
		n, toBackend, toClient, err := b.Feed(in, &k)
		if err != nil || n != len(in) || toClient == nil {
			t.Fatalf("v%d: %d of %d bytes, %v", v, n, len(in), err)
		}
		if v >= mc.Protocol1_13 {
			if want := frames(-1, mc.AppendPluginResponse(nil, mc.PluginResponse{MessageID: 3})); !bytes.Equal(toBackend, want) {
				t.Fatalf("v%d: answer to an unknown channel %x, want %x", v, toBackend, want)
			}
		}
		if want := frames(-1, mc.AppendLoginSuccess(nil, v, mc.LoginSuccess{UUID: mc.OfflineUUID([]byte("Alex")), Name: []byte("Alex")})); !bytes.Equal(toClient, want) {
			t.Fatalf("v%d: client %x, want %x", v, toClient, want)
		}
	}
}

func TestBackendLoginFailures(t *testing.T) {
	success := mc.AppendLoginSuccess(nil, 764, mc.LoginSuccess{Name: []byte("Alex")})
	velocityReq := mc.AppendPluginRequest(nil, mc.PluginRequest{MessageID: 1, Channel: []byte(mc.VelocityChannel)})
	bomb := append(mc.AppendVarInt(nil, MaxBackendPacket+1), 0x78, 0x9c)
	for _, tc := range []struct {
		name string
		set  *Settings
		in   []byte
		kind string
	}{
		{"success without the velocity request", velocitySettings(), frames(-1, success), KindNotSetUp},
		{"velocity request to a bungeecord proxy", &Settings{Forwarding: config.ForwardBungeeCord, FollowBackend: true}, frames(-1, velocityReq), KindNotSetUp},
		{"velocity request without a secret", &Settings{Forwarding: config.ForwardVelocity, FollowBackend: true}, frames(-1, velocityReq), KindNotSetUp},
		{"encryption request", velocitySettings(), frames(-1, []byte{mc.PacketEncryptionRequest, 0}), KindOnlineMode},
		{"disconnect", velocitySettings(), frames(-1, mc.AppendLoginDisconnect(nil, []byte(`{"text":"no"}`))[1:]), KindRefused},
		{"inflates past the limit", velocitySettings(), append(frames(-1, mc.AppendSetCompression(nil, 0)), append(mc.AppendVarInt(nil, int32(len(bomb))), bomb...)...), KindBadPacket},
		{"play packet", velocitySettings(), frames(-1, []byte{0x26}), KindBadPacket},
		{"bad frame", velocitySettings(), []byte{0xff, 0xff, 0xff, 0xff}, KindBadPacket},
		{"malformed success", &Settings{FollowBackend: true}, frames(-1, success[:5]), KindBadPacket},
	} {
		b := newTestBackend(t, tc.set, 764)
		var k mc.Compressor
		_, _, toClient, err := b.Feed(tc.in, &k)
		var le *Error
		if !errors.As(err, &le) || le.Kind != tc.kind || toClient != nil {
			t.Errorf("%s: %v (client %x), want kind %s", tc.name, err, toClient, tc.kind)
			continue
		}
		msg := DisconnectFrame(err)
		fl, hl, _ := mc.SplitFrame(msg, 0)
		if fl == 0 || fl != len(msg) {
			t.Errorf("%s: no whole disconnect frame for the player: %x", tc.name, msg)
			continue
		}
		reason, err := mc.ParseLoginDisconnect(msg[hl:])
		if err != nil || len(reason) == 0 {
			t.Errorf("%s: disconnect %x: %v", tc.name, msg, err)
		}
	}
	if f := DisconnectFrame(errors.New("other")); f != nil {
		t.Errorf("a foreign error gets disconnect %x", f)
	}
	if _, err := NewBackend(velocitySettings(), 764, []byte{0, 4, 'A', 'l', 'e', 'x'}, "ip"); err == nil {
		t.Error("a 764 Login Start without its UUID was accepted")
	}
}

// TestClientThreshold: the client is told its own threshold, whatever the
// backend's, and its Login Success comes in that framing; Thresholds says
// both, for the re-framer.
func TestClientThreshold(t *testing.T) {
	success := mc.AppendLoginSuccess(nil, 764, mc.LoginSuccess{Name: []byte("Alex")})
	for _, tc := range []struct {
		name            string
		set             *Settings
		backend         int
		client          int
		v               int32
		wantSetCompress bool
	}{
		{"backend's", &Settings{FollowBackend: true}, 64, 64, 764, true},
		{"own over the backend's", &Settings{Threshold: 256}, 64, 256, 764, true},
		{"off, backend compresses", &Settings{Threshold: -1}, 64, -1, 764, false},
		{"own, backend does not compress", &Settings{Threshold: 128}, -1, 128, 764, true},
		{"1.7 has no compression", &Settings{Threshold: 128}, -1, -1, 5, false},
	} {
		b := newTestBackend(t, tc.set, tc.v)
		var k mc.Compressor
		in := frames(-1, success)
		if tc.backend >= 0 {
			in = append(frames(-1, mc.AppendSetCompression(nil, int32(tc.backend))), frames(tc.backend, success)...)
		}
		if tc.v == 5 {
			in = frames(-1, mc.AppendLoginSuccess(nil, tc.v, mc.LoginSuccess{Name: []byte("Alex")}))
		}
		_, _, toClient, err := b.Feed(in, &k)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c, bk := b.Thresholds(); c != tc.client || bk != tc.backend {
			t.Errorf("%s: thresholds client %d backend %d, want %d and %d", tc.name, c, bk, tc.client, tc.backend)
		}
		var want []byte
		if tc.wantSetCompress {
			want = frames(-1, mc.AppendSetCompression(nil, int32(tc.client)))
		}
		want = append(want, frames(tc.client, mc.AppendLoginSuccess(nil, tc.v, mc.LoginSuccess{UUID: b.UUID(), Name: []byte("Alex")}))...)
		if !bytes.Equal(toClient, want) {
			t.Errorf("%s: client gets %x, want %x", tc.name, toClient, want)
		}
	}
}

func TestBackendFeedAllocs(t *testing.T) {
	// A backend that sends its login a few bytes at a time costs nothing
	// per partial read.
	b := newTestBackend(t, velocitySettings(), 764)
	var k mc.Compressor
	in := frames(-1, mc.AppendPluginRequest(nil, mc.PluginRequest{MessageID: 1, Channel: []byte(mc.VelocityChannel)}))
	if n := testing.AllocsPerRun(100, func() { _, _, _, _ = b.Feed(in[:len(in)-1], &k) }); n != 0 {
		t.Errorf("Feed of a partial frame allocates %v times", n)
	}
}

func FuzzBackendFeed(f *testing.F) {
	f.Add(frames(-1, mc.AppendPluginRequest(nil, mc.PluginRequest{MessageID: 1, Channel: []byte(mc.VelocityChannel), Data: []byte{4}}),
		mc.AppendSetCompression(nil, 8)), int32(764), 1)
	f.Add(frames(8, mc.AppendLoginSuccess(nil, 764, mc.LoginSuccess{Name: []byte("Alex")})), int32(764), 8)
	f.Add(frames(-1, mc.AppendLoginSuccess(nil, 5, mc.LoginSuccess{Name: []byte("Alex")})), int32(5), -1)
	f.Fuzz(func(t *testing.T, in []byte, v int32, startThreshold int) {
		set := &Settings{Forwarding: config.ForwardVelocity, Secret: secret, FollowBackend: true}
		b, err := NewBackend(set, v, mc.AppendLoginStart(nil, v, mc.LoginStart{Name: []byte("Alex"), HasUUID: true}), "ip")
		if err != nil {
			return
		}
		b.threshold = max(min(startThreshold, 1<<16), -1)
		var k mc.Compressor
		n, _, toClient, err := b.Feed(in, &k)
		if n < 0 || n > len(in) {
			t.Fatalf("consumed %d of %d", n, len(in))
		}
		if err != nil && toClient != nil {
			t.Fatalf("a failure with a client login")
		}
		var le *Error
		if err != nil && !errors.As(err, &le) {
			t.Fatalf("failure %v is no *Error", err)
		}
	})
}

// BenchmarkVelocityLogin is the proxy's part of one terminated login with
// velocity forwarding and compression: Login Start parsed, the request
// answered (HMAC-SHA256), Set Compression and Login Success read, the
// client's Set Compression and Login Success written.
func BenchmarkVelocityLogin(b *testing.B) {
	set := velocitySettings()
	start := mc.AppendLoginStart(nil, 767, mc.LoginStart{Name: []byte("Alex"), HasUUID: true})
	in := append(frames(-1, mc.AppendPluginRequest(nil, mc.PluginRequest{MessageID: 1, Channel: []byte(mc.VelocityChannel), Data: []byte{4}}),
		mc.AppendSetCompression(nil, 256)), frames(256, mc.AppendLoginSuccess(nil, 767, mc.LoginSuccess{UUID: mc.OfflineUUID([]byte("Alex")), Name: []byte("Alex")}))...)
	var k mc.Compressor
	b.ReportAllocs()
	for b.Loop() {
		be, err := NewBackend(set, 767, start, "192.0.2.7")
		if err != nil {
			b.Fatal(err)
		}
		if _, _, toClient, err := be.Feed(in, &k); err != nil || toClient == nil {
			b.Fatal(err)
		}
	}
}

// TestAuthenticatedIdentity: an online login's backend side carries the
// session server's profile: UUID, name and properties in the bungeecord
// address (as JSON), the velocity player info and the client's Login
// Success.
func TestAuthenticatedIdentity(t *testing.T) {
	const v = 764
	b, err := NewBackend(&Settings{Forwarding: config.ForwardBungeeCord, FollowBackend: true, Online: true}, v,
		mc.AppendLoginStart(nil, v, mc.LoginStart{Name: []byte("alice")}), "192.0.2.9")
	if err != nil {
		t.Fatal(err)
	}
	p := mcauth.Profile{UUID: [16]byte{1, 2, 3}, Name: "Alice", Properties: []mcauth.Property{{Name: "textures", Value: "dg==", Signature: "c2ln"}}}
	b.Authenticated(p)
	uuid, props := b.Identity()
	if uuid != p.UUID || string(props) != `[{"name":"textures","value":"dg==","signature":"c2ln"}]` {
		t.Fatalf("identity %x %s", uuid, props)
	}
	frame, _ := AppendHandshake(nil, nil, mc.Handshake{ProtocolVersion: v, Address: []byte("play.example"), Port: 25565, NextState: 2},
		Rewrite{Bungee: true, UUID: &uuid, Properties: props}, "192.0.2.9", "alice")
	if want := "play.example\x00192.0.2.9\x0001020300000000000000000000000000\x00" + string(props); !bytes.Contains(frame, []byte(want)) {
		t.Fatalf("handshake %q, want the address %q", frame, want)
	}
	var k mc.Compressor
	out, err := b.AppendClientLogin(nil, &k)
	if err != nil {
		t.Fatal(err)
	}
	_, hl, _ := mc.SplitFrame(out, mc.MaxFrameLength)
	ls, err := mc.ParseLoginSuccess(out[hl:], v)
	if err != nil || ls.UUID != p.UUID || string(ls.Name) != "Alice" || len(ls.Properties) != 1 || string(ls.Properties[0].Value) != "dg==" || !ls.Properties[0].Signed {
		t.Fatalf("login success %+v (%v)", ls, err)
	}
	if FailureReason(errors.New("malformed")) != reasons.AuthBadResponse {
		t.Error("a malformed response is not auth_bad_response")
	}
}

// TestBackendLoginStart: the backend's Login Start carries the
// authenticated profile's name and UUID where the version has a UUID, and
// never the client's 1.19-1.19.2 chat key (which the velocity forwarding
// still carries); it replaces exactly the client's frame, and a relayed
// login (nil Backend) or an input without a whole frame replaces nothing.
func TestBackendLoginStart(t *testing.T) {
	key := &mc.PlayerKey{Expiry: 1 << 40, PublicKey: bytes.Repeat([]byte{1}, 162), Signature: bytes.Repeat([]byte{2}, 512)}
	profile := mcauth.Profile{UUID: [16]byte{0xab, 15: 0xcd}, Name: "Alex_Online"}
	for _, v := range []int32{mc.Protocol1_7_2 + 1, mc.Protocol1_8, mc.Protocol1_16, mc.Protocol1_19, 760, 761, 763, 764, 774} {
		for _, online := range []bool{false, true} {
			typed := mc.LoginStart{Name: []byte("alex_online"), Key: key, HasUUID: true, UUID: [16]byte{9, 9}}
			body := mc.AppendLoginStart(nil, v, typed)
			b, err := NewBackend(&Settings{Forwarding: config.ForwardVelocity, Secret: secret, Online: online}, v, body, "192.0.2.7")
			if err != nil {
				t.Fatal(err)
			}
			want := mc.LoginStart{Name: typed.Name, UUID: mc.OfflineUUID(typed.Name)}
			if online {
				b.Authenticated(profile)
				want = mc.LoginStart{Name: []byte(profile.Name), UUID: profile.UUID}
			}
			client := mc.AppendPacket(nil, mc.PacketLoginStart, body[1:])
			rest := []byte{3, 0x7f, 1, 2} // what the client sent next
			out, n := b.AppendLoginStart([]byte("hs"), append(bytes.Clone(client), rest...))
			if n != len(client) || !bytes.HasPrefix(out, []byte("hs")) {
				t.Fatalf("v%d: replaces %d bytes of the input (out %x), want the client's frame, %d", v, n, out, len(client))
			}
			fl, hl, err := mc.SplitFrame(out[2:], mc.MaxFrameLength)
			if err != nil || fl != len(out)-2 {
				t.Fatalf("v%d: %x is not one frame after the prefix: %v", v, out, err)
			}
			got, err := mc.ParseLoginStartAt(out[2+hl:], v)
			if err != nil {
				t.Fatalf("v%d: the backend's Login Start %x: %v", v, out[2+hl:], err)
			}
			hasUUID := mc.LoginLayoutOf(v).Start != mc.StartNameOnly && mc.LoginLayoutOf(v).Start != mc.StartSig
			if got.Key != nil || !bytes.Equal(got.Name, want.Name) || got.HasUUID != hasUUID || hasUUID && got.UUID != want.UUID {
				t.Errorf("v%d online=%t: the backend's Login Start %+v, want %s, no key, UUID %x: %t", v, online, got, want.Name, want.UUID, hasUUID)
			}
			if v >= mc.Protocol1_19 && v <= 760 && b.key == nil {
				t.Errorf("v%d: the chat key is gone from the velocity forwarding too", v)
			}
		}
	}
	var relayed *Backend
	if out, n := relayed.AppendLoginStart([]byte("hs"), []byte{2, 0, 1}); string(out) != "hs" || n != 0 {
		t.Errorf("nil Backend: %q, %d; want nothing appended or replaced", out, n)
	}
	b := newTestBackend(t, velocitySettings(), 764)
	if out, n := b.AppendLoginStart(nil, []byte{5, 0, 1}); len(out) != 0 || n != 0 {
		t.Errorf("half a frame: %x, %d; want nothing appended or replaced", out, n)
	}
}
