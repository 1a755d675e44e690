package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// pluginBackendThreshold is the compression threshold of pluginBackend.
const pluginBackendThreshold = 64

// pluginBackend is a hand-written 1.20.2 backend behind velocity
// forwarding, as a Forge or Fabric server logs a player in: after Set
// Compression it asks velocity:player_info (id 1) and two mod channels
// (ids 7 and 9, the first one large enough to be compressed), and sends
// Login Success at once (early) or after both answers. It reports on got
// what it received, in order, as "id:channel-or-packet:data" lines, or the
// error that stopped it.
func pluginBackend(t *testing.T, early bool, got chan<- []string) string {
	t.Helper()
	big := bytes.Repeat([]byte("registry "), 40)
	return testserver.Conns(t, func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		var k mc.Compressor
		var seen []string
		err := func() error {
			for range 2 { // the handshake and Login Start, plain
				if _, err := readFrameFrom(c, -1, &k); err != nil {
					return err
				}
			}
			out := k.AppendFrame(nil, mc.AppendSetCompression(nil, pluginBackendThreshold), -1)
			for _, pr := range []mc.PluginRequest{
				{MessageID: 1, Channel: []byte(mc.VelocityChannel), Data: []byte{1}},
				{MessageID: 7, Channel: []byte("fml:loginwrapper"), Data: big},
				{MessageID: 9, Channel: []byte("fabric-networking-api-v1:early_registration"), Data: []byte("hello")},
			} {
				out = k.AppendFrame(out, mc.AppendPluginRequest(nil, pr), pluginBackendThreshold)
			}
			success := k.AppendFrame(nil, mc.AppendLoginSuccess(nil, 764, mc.LoginSuccess{Name: []byte("Modder")}), pluginBackendThreshold)
			if early {
				out = append(out, success...)
			}
			if _, err := c.Write(out); err != nil {
				return err
			}
			for i := 0; i < 4; i++ {
				if i == 3 && !early {
					if _, err := c.Write(success); err != nil {
						return err
					}
				}
				p, err := readFrameFrom(c, pluginBackendThreshold, &k)
				if err != nil {
					return err
				}
				if i == 3 {
					id, _, _ := mc.ParsePacketID(p)
					seen = append(seen, fmt.Sprintf("packet 0x%02x", id))
					break
				}
				resp, err := mc.ParsePluginResponse(p)
				if err != nil {
					return fmt.Errorf("answer %d: %w", i, err)
				}
				if resp.MessageID == 1 {
					if _, err := mc.VerifyVelocityResponse(resp.Data, []byte(testForwardingSecret), 4); err != nil {
						return fmt.Errorf("the player info: %w", err)
					}
					seen = append(seen, "1:velocity")
					continue
				}
				seen = append(seen, fmt.Sprintf("%d:%t:%s", resp.MessageID, resp.Successful, resp.Data))
			}
			ready := k.AppendFrame(nil, readyPacket, pluginBackendThreshold)
			_, err := c.Write(ready)
			return err
		}()
		if err != nil {
			seen = append(seen, "error: "+err.Error())
		}
		got <- seen
		_, _ = io.Copy(io.Discard, c)
	})
}

// readyPacket is the configuration packet pluginBackend sends after the
// client's Login Acknowledged.
var readyPacket = append(mc.AppendVarInt(nil, 0x7f), "ready"...)

// readFrameFrom reads one frame from r and returns its packet (ID and
// data), inflated when threshold is not -1.
func readFrameFrom(r io.Reader, threshold int, k *mc.Compressor) ([]byte, error) {
	var hdr []byte
	for {
		var b [1]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("frame length: %w", err)
		}
		if hdr = append(hdr, b[0]); b[0]&0x80 == 0 {
			break
		}
	}
	n, _, err := mc.ReadVarInt(hdr)
	if err != nil {
		return nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("frame body: %w", err)
	}
	if threshold < 0 {
		return body, nil
	}
	p, err := k.Inflate(body, threshold, 1<<21)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(p), nil
}

// TestLoginPluginChannelsRelayed: at a login the proxy completes, a
// backend's Login Plugin Requests on mod channels (Forge's, Fabric's) reach
// the client under their message IDs, in the client's plain framing, and
// the client's answers (here in another order, one large enough for the
// backend's framing to deflate) reach the backend in its compressed
// framing; velocity:player_info is answered by the proxy and never shown
// to the client. A backend that sends Login Success before the answers
// are in has it held: the client's answers still reach it in the login
// state, and its Login Acknowledged after them (1.20.2: the client enters
// configuration only when the backend is there).
func TestLoginPluginChannelsRelayed(t *testing.T) {
	for _, early := range []bool{false, true} {
		t.Run(fmt.Sprintf("early_success=%t", early), func(t *testing.T) {
			checkNoLeaks(t)
			got := make(chan []string, 1)
			p, addr := startProxy(t, offlineConfig(t, pluginBackend(t, early, got), "velocity"))
			c := dial(t, addr)
			if _, err := c.Write(append(handshake(764, "localhost\x00FML3\x00", mc.NextStateLogin), loginStartUUID("Modder")...)); err != nil {
				t.Fatal(err)
			}
			var k mc.Compressor
			var ids []int32
			for range 2 {
				p, err := readFrameFrom(c, -1, &k)
				if err != nil {
					t.Fatal(err)
				}
				pr, err := mc.ParsePluginRequest(p)
				if err != nil {
					t.Fatalf("want a login plugin request: %v (%x)", err, p)
				}
				if string(pr.Channel) == mc.VelocityChannel {
					t.Fatal("the client was asked for velocity:player_info")
				}
				ids = append(ids, pr.MessageID)
			}
			if fmt.Sprint(ids) != "[7 9]" {
				t.Fatalf("requests %v, want 7 and 9", ids)
			}
			answer := strings.Repeat("mods ", 30) // past the backend's threshold
			var out []byte
			for _, r := range []mc.PluginResponse{{MessageID: 9}, {MessageID: 7, Successful: true, Data: []byte(answer)}} {
				out = k.AppendFrame(out, mc.AppendPluginResponse(nil, r), -1)
			}
			if _, err := c.Write(out); err != nil {
				t.Fatal(err)
			}
			if p, err := readFrameFrom(c, -1, &k); err != nil || !bytes.Equal(p, mc.AppendSetCompression(nil, pluginBackendThreshold)) {
				t.Fatalf("want Set Compression %d: %x, %v", pluginBackendThreshold, p, err)
			}
			if p, err := readFrameFrom(c, pluginBackendThreshold, &k); err != nil || len(p) == 0 || p[0] != mc.PacketLoginSuccess {
				t.Fatalf("want Login Success: %x, %v", p, err)
			}
			if _, err := c.Write(k.AppendFrame(nil, []byte{mc.PacketLoginAcknowledged}, pluginBackendThreshold)); err != nil {
				t.Fatal(err)
			}
			if p, err := readFrameFrom(c, pluginBackendThreshold, &k); err != nil || !bytes.Equal(p, readyPacket) {
				t.Fatalf("want the backend's configuration packet: %x, %v", p, err)
			}
			want := []string{"1:velocity", "9:false:", "7:true:" + answer, "packet 0x03"}
			if seen := <-got; fmt.Sprint(seen) != fmt.Sprint(want) {
				t.Fatalf("the backend received\n%q\nwant\n%q", seen, want)
			}
			if st := p.Stats(); st.Routed != 1 || len(st.Rejected) != 0 {
				t.Fatalf("routed %d, refusals %v", st.Routed, st.Rejected)
			}
		})
	}
}

// TestLoginPluginBadAnswers: before its Login Success a client may send
// only answers to the requests relayed to it: a Login Acknowledged ahead
// of its Login Success (a client entering configuration before the backend
// does), an answer to a request never relayed, a second answer to one, or
// bytes when nothing was asked end the login as bad_login_packet with
// vanilla's "Protocol error", and the backend connection is closed.
func TestLoginPluginBadAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		send []mc.PluginResponse
		raw  []byte
	}{
		{"login acknowledged first", nil, mc.AppendPacket(nil, mc.PacketLoginAcknowledged, nil)},
		{"unknown message id", []mc.PluginResponse{{MessageID: 8}}, nil},
		{"answered twice", []mc.PluginResponse{{MessageID: 9}, {MessageID: 9}}, nil},
		{"oversized answer", nil, mc.AppendVarInt(nil, 1<<21-1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			got := make(chan []string, 1)
			p, addr := startProxy(t, offlineConfig(t, pluginBackend(t, false, got), "velocity"))
			c := dial(t, addr)
			if _, err := c.Write(append(handshake(764, "localhost", mc.NextStateLogin), loginStartUUID("Modder")...)); err != nil {
				t.Fatal(err)
			}
			var k mc.Compressor
			for range 2 {
				if _, err := readFrameFrom(c, -1, &k); err != nil {
					t.Fatal(err)
				}
			}
			out := tc.raw
			for _, r := range tc.send {
				out = k.AppendFrame(out, mc.AppendPluginResponse(nil, r), -1)
			}
			if _, err := c.Write(out); err != nil {
				t.Fatal(err)
			}
			id, data := readPacket(t, c)
			if id != mc.PacketLoginDisconnect || !strings.Contains(string(data), "Protocol error") {
				t.Fatalf("packet 0x%02x %q, want a disconnect saying Protocol error", id, data)
			}
			waitStats(t, p, "the refusal", func(st proxymetrics.Stats) bool { return st.Rejected["bad_login_packet"] == 1 && st.Active == 0 })
			seen := <-got
			if len(seen) == 0 || !strings.HasPrefix(seen[len(seen)-1], "error: ") {
				t.Fatalf("the backend received %q and was not closed", seen)
			}
			var ne net.Error
			if _, err := readFrameFrom(c, -1, &k); err == nil || errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the client is still open: %v", err)
			}
		})
	}
}
