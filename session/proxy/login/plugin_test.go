package login

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/config"
)

func pluginRequest(id int32, channel, data string) []byte {
	return mc.AppendPluginRequest(nil, mc.PluginRequest{MessageID: id, Channel: []byte(channel), Data: []byte(data)})
}

func pluginResponse(id int32, ok bool, data string) []byte {
	return mc.AppendPluginResponse(nil, mc.PluginResponse{MessageID: id, Successful: ok, Data: []byte(data)})
}

// TestPluginRequestsRelayed: at the first login of a 1.13+ client, mod
// channels' requests go to the client in its plain framing under their
// message IDs, velocity:player_info is answered here, the answers go back
// in the backend's framing, and a Login Success that came with requests
// unanswered is held until the last answer.
func TestPluginRequestsRelayed(t *testing.T) {
	for _, v := range []int32{mc.Protocol1_13, 758, 764, 774} {
		for _, early := range []bool{false, true} {
			name := fmt.Sprintf("v%d/early=%t", v, early)
			var k mc.Compressor
			b := newTestBackend(t, velocitySettings(), v)
			success := mc.AppendLoginSuccess(nil, v, mc.LoginSuccess{UUID: b.UUID(), Name: []byte("Alex")})
			packets := [][]byte{pluginRequest(1, mc.VelocityChannel, "\x01"), pluginRequest(5, "fml:loginwrapper", strings.Repeat("x", 100)), pluginRequest(6, "fabric:hello", "hi")}
			if early {
				packets = append(packets, success)
			}
			in := append(frames(-1, mc.AppendSetCompression(nil, 32)), frames(32, packets...)...)
			n, toBackend, toClient, err := b.Feed(in, &k)
			if err != nil || n != len(in) || b.LoggedIn() || b.Awaiting() != 2 || b.SuccessHeld() != early {
				t.Fatalf("%s: %d of %d bytes, %v, logged in %t, awaiting %d, held %t", name, n, len(in), err, b.LoggedIn(), b.Awaiting(), b.SuccessHeld())
			}
			if fl, _, _ := mc.SplitFrame(toBackend, mc.MaxFrameLength); fl != len(toBackend) || fl == 0 {
				t.Fatalf("%s: %d bytes to the backend, want the velocity answer alone", name, len(toBackend))
			}
			if want := frames(-1, packets[1], packets[2]); !bytes.Equal(toClient, want) {
				t.Fatalf("%s: client gets %x, want the two requests plain %x", name, toClient, want)
			}
			if early { // nothing more is read until the answers are in
				if n, _, toClient, err := b.Feed([]byte{1, 2, 3}, &k); n != 0 || toClient != nil || err != nil {
					t.Fatalf("%s: fed while held: %d, %x, %v", name, n, toClient, err)
				}
			}
			answers := frames(-1, pluginResponse(6, false, ""), pluginResponse(5, true, strings.Repeat("y", 50)))
			toBackend, toClient, err = b.FeedClient(answers[:7], &k) // cut inside the second
			if err != nil || toClient != nil {
				t.Fatalf("%s: first part: %v, %x", name, err, toClient)
			}
			if want := frames(32, pluginResponse(6, false, "")); !bytes.Equal(toBackend, want) {
				t.Fatalf("%s: backend gets %x, want %x", name, toBackend, want)
			}
			toBackend, toClient, err = b.FeedClient(answers[7:], &k)
			if err != nil || b.Awaiting() != 0 {
				t.Fatalf("%s: second part: %v, %d awaiting", name, err, b.Awaiting())
			}
			if want := frames(32, pluginResponse(5, true, strings.Repeat("y", 50))); !bytes.Equal(toBackend, want) {
				t.Fatalf("%s: backend gets %x, want %x", name, toBackend, want)
			}
			if !early {
				if toClient != nil || b.LoggedIn() {
					t.Fatalf("%s: logged in before the backend's Login Success", name)
				}
				_, _, toClient, err = b.Feed(frames(32, success), &k)
			}
			if err != nil || !b.LoggedIn() {
				t.Fatalf("%s: not logged in: %v", name, err)
			}
			want := append(frames(-1, mc.AppendSetCompression(nil, 32)), frames(32, success)...)
			if !bytes.Equal(toClient, want) {
				t.Fatalf("%s: client gets %x, want Set Compression and Login Success %x", name, toClient, want)
			}
		}
	}
}

// TestPluginRequestsNotRelayed: a move's login (Again), and a client
// before 1.13, which has no login plugin messages, get requests answered
// as not understood by the proxy.
func TestPluginRequestsNotRelayed(t *testing.T) {
	set := &Settings{Forwarding: config.ForwardNone, FollowBackend: true}
	for name, b := range map[string]*Backend{
		"again":  newTestBackend(t, set, 764).Again(set),
		"1.12.2": newTestBackend(t, set, 340),
	} {
		var k mc.Compressor
		_, toBackend, toClient, err := b.Feed(frames(-1, pluginRequest(4, "fml:handshake", "x")), &k)
		if err != nil || toClient != nil || b.Awaiting() != 0 {
			t.Fatalf("%s: %v, client %x, %d awaiting", name, err, toClient, b.Awaiting())
		}
		if want := frames(-1, pluginResponse(4, false, "")); !bytes.Equal(toBackend, want) {
			t.Fatalf("%s: backend gets %x, want not understood %x", name, toBackend, want)
		}
	}
}

// TestPluginClientFaults: what a client may not send before its Login
// Success is a *ClientError, and a backend past the bounds fails.
func TestPluginClientFaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"login acknowledged", frames(-1, []byte{mc.PacketLoginAcknowledged}), "packet 0x03 before"},
		{"unknown id", frames(-1, pluginResponse(8, false, "")), "answers no request"},
		{"answered twice", frames(-1, pluginResponse(5, false, ""), pluginResponse(5, false, "")), "with no login plugin request"},
		{"bytes past the last answer", append(frames(-1, pluginResponse(5, false, "")), 9), "with no login plugin request"},
		{"oversized", mc.AppendVarInt(nil, MaxPluginResponse+1), "frame"},
		{"malformed", frames(-1, []byte{mc.PacketLoginPluginResponse, 5, 7}), "plugin"},
		{"empty frame", []byte{0}, ""},
	} {
		var k mc.Compressor
		b := newTestBackend(t, velocitySettings(), 764)
		if _, _, _, err := b.Feed(frames(-1, pluginRequest(5, "fml:loginwrapper", "")), &k); err != nil {
			t.Fatal(err)
		}
		_, _, err := b.FeedClient(tc.in, &k)
		var ce *ClientError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a client error saying %q", tc.name, err, tc.want)
		}
	}
	b := newTestBackend(t, velocitySettings(), 764)
	var k mc.Compressor
	var in []byte
	for i := range MaxPendingRequests + 1 {
		in = append(in, frames(-1, pluginRequest(int32(i), "a:b", ""))...)
	}
	var le *Error
	if _, _, _, err := b.Feed(in, &k); !errors.As(err, &le) || le.Kind != KindBadPacket {
		t.Errorf("%d requests unanswered: %v, want %s", MaxPendingRequests+1, err, KindBadPacket)
	}
	b = newTestBackend(t, velocitySettings(), 764)
	if _, _, _, err := b.Feed(frames(-1, pluginRequest(3, "a:b", ""), pluginRequest(3, "a:b", "")), &k); !errors.As(err, &le) || le.Kind != KindBadPacket {
		t.Errorf("a request id twice: %v, want %s", err, KindBadPacket)
	}
}

// TestForgeMarkers: a Forge marker after the host reaches the backend as
// the client sent it with forwarding none or velocity (and behind
// rewrite_host); BungeeCord's address form has no room for it, so a legacy
// Forge client's becomes the forgeClient property, as BungeeCord sends it.
func TestForgeMarkers(t *testing.T) {
	uuid := mc.OfflineUUID([]byte("Alex"))
	props := []byte(`[{"name":"textures","value":"v"}]`)
	for _, tc := range []struct {
		marker string
		rw     Rewrite
		want   string
	}{
		{"\x00FML\x00", Rewrite{}, "play.example\x00FML\x00"},
		{"\x00FML2\x00", Rewrite{}, "play.example\x00FML2\x00"},
		{"\x00FML3\x00", Rewrite{Host: []byte("backend.local")}, "backend.local\x00FML3\x00"},
		{"\x00FORGE", Rewrite{}, "play.example\x00FORGE"},
		{"\x00FML\x00", Rewrite{Bungee: true}, "play.example\x00192.0.2.7\x00" + hexUUID(uuid) + "\x00" + `[{"name":"forgeClient","value":"true"}]`},
		{"\x00FML\x00", Rewrite{Bungee: true, UUID: &uuid, Properties: props}, "play.example\x00192.0.2.7\x00" + hexUUID(uuid) + "\x00" + `[{"name":"textures","value":"v"},{"name":"forgeClient","value":"true"}]`},
		{"\x00FML2\x00", Rewrite{Bungee: true}, "play.example\x00192.0.2.7\x00" + hexUUID(uuid)},
	} {
		hs := mc.Handshake{ProtocolVersion: 340, Address: []byte("play.example" + tc.marker), Port: 25565, NextState: 2}
		frame, _ := AppendHandshake(nil, nil, hs, tc.rw, "192.0.2.7", "Alex")
		_, hl, _ := mc.SplitFrame(frame, mc.MaxFrameLength)
		got, err := mc.ParseHandshake(frame[hl:])
		if err != nil || string(got.Address) != tc.want {
			t.Errorf("%q %+v: address %q, %v; want %q", tc.marker, tc.rw, got.Address, err, tc.want)
		}
	}
}

func hexUUID(u [16]byte) string { return string(mc.AppendUUID(nil, u, false)) }

func FuzzFeedClient(f *testing.F) {
	f.Add(frames(-1, pluginResponse(5, true, "x"), pluginResponse(6, false, "")), 2)
	f.Add(frames(-1, []byte{mc.PacketLoginAcknowledged}), 1)
	f.Add(mc.AppendVarInt(nil, 1<<20), 3)
	f.Fuzz(func(t *testing.T, in []byte, cut int) {
		var k mc.Compressor
		b := newTestBackend(t, &Settings{FollowBackend: true}, 764)
		if _, _, _, err := b.Feed(append(frames(-1, mc.AppendSetCompression(nil, 8)),
			frames(8, pluginRequest(5, "a:b", ""), pluginRequest(6, "c:d", ""), mc.AppendLoginSuccess(nil, 764, mc.LoginSuccess{Name: []byte("Alex")}))...), &k); err != nil {
			t.Fatal(err)
		}
		cut = min(max(cut, 0), len(in))
		for _, part := range [][]byte{in[:cut], in[cut:]} {
			toBackend, toClient, err := b.FeedClient(part, &k)
			var ce *ClientError
			if err != nil && !errors.As(err, &ce) {
				t.Fatalf("failure %v is no *ClientError", err)
			}
			if err != nil {
				return
			}
			if len(toBackend) > 2*len(in)+64 || toClient != nil && !b.LoggedIn() {
				t.Fatalf("%d bytes to the backend of %d, client %x", len(toBackend), len(in), toClient)
			}
		}
		if len(b.held) > MaxPluginResponse {
			t.Fatalf("holds %d bytes", len(b.held))
		}
	})
}
