package proxy

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// faultKey is a player's chat key for the 1.19-1.19.2 cases: the client
// signs the verify token with it.
type faultKey struct {
	priv *rsa.PrivateKey
	key  mc.PlayerKey
}

func newFaultKey(t *testing.T) faultKey {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return faultKey{priv: priv, key: mc.PlayerKey{Expiry: time.Now().Add(time.Hour).UnixMilli(), PublicKey: der, Signature: bytes.Repeat([]byte{7}, 512)}}
}

// sign is a 1.19 client's signed verify token: SHA256withRSA over the
// token and the salt.
func (k faultKey) sign(t *testing.T, token []byte, salt int64) []byte {
	t.Helper()
	h := sha256.Sum256(binary.BigEndian.AppendUint64(append([]byte(nil), token...), uint64(salt)))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k.priv, crypto.SHA256, h[:])
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// TestOnlineLoginBadResponses: Encryption Responses that must not pass,
// from raw clients of 1.7.10, 1.8, 1.19, 1.19.2, 1.20.2 and 1.21.11
// (TestOnlineLoginClientFaults has the wrong verify token, a malformed
// response and a stall at 1.20.2): a shared secret that is not 16 bytes or
// does not decrypt, a wrong verify token, a 1.19 verify token signed with
// another key than Login Start's or without a key there, a response with
// bytes past its fields, one past the size bound, and another packet in
// its place. Each gets vanilla's text in the clear (no secret is agreed),
// a counted reason, and never reaches the session server or a backend.
func TestOnlineLoginBadResponses(t *testing.T) {
	key, other := newFaultKey(t), newFaultKey(t)
	encrypt := func(t *testing.T, req mc.EncryptionRequest, b []byte) []byte {
		t.Helper()
		out, err := rsa.EncryptPKCS1v15(rand.Reader, parseRSA(t, req.PublicKey), b)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	goodSecret := bytes.Repeat([]byte{0x5a}, 16)
	type response func(t *testing.T, v int32, req mc.EncryptionRequest) []byte
	plain := func(secret []byte, token func([]byte) []byte) response {
		return func(t *testing.T, v int32, req mc.EncryptionRequest) []byte {
			return mc.AppendEncryptionResponse(nil, v, mc.EncryptionResponse{SharedSecret: encrypt(t, req, secret), VerifyToken: encrypt(t, req, token(req.VerifyToken))})
		}
	}
	same := func(b []byte) []byte { return b }
	signed := func(by faultKey) response {
		return func(t *testing.T, v int32, req mc.EncryptionRequest) []byte {
			return mc.AppendEncryptionResponse(nil, v, mc.EncryptionResponse{SharedSecret: encrypt(t, req, goodSecret), Signed: true, Salt: 42, Signature: by.sign(t, req.VerifyToken, 42)})
		}
	}
	const protocolError = "Protocol error"
	for _, tc := range []struct {
		name     string
		versions []int32
		withKey  bool // Login Start carries key's chat key
		response response
		want     string // "" for a close without a message
		reason   string
	}{
		{"15-byte secret", []int32{mc.Protocol1_7_10, mc.Protocol1_8, 774}, false, plain(goodSecret[:15], same), protocolError, "auth_bad_response"},
		{"secret that does not decrypt", []int32{mc.Protocol1_8, 760}, false, func(t *testing.T, v int32, req mc.EncryptionRequest) []byte {
			return mc.AppendEncryptionResponse(nil, v, mc.EncryptionResponse{SharedSecret: bytes.Repeat([]byte{1}, 128), VerifyToken: encrypt(t, req, req.VerifyToken)})
		}, protocolError, "auth_bad_response"},
		{"wrong verify token", []int32{mc.Protocol1_7_10, mc.Protocol1_19, 774}, false, plain(goodSecret, func(b []byte) []byte {
			return append([]byte{b[0] ^ 0xff}, b[1:]...)
		}), protocolError, "auth_bad_response"},
		{"token signed by another key", []int32{mc.Protocol1_19, 760}, true, signed(other), protocolError, "auth_bad_response"},
		{"signed token without a key", []int32{mc.Protocol1_19, 760}, false, signed(key), protocolError, "auth_bad_response"},
		{"bytes past the fields", []int32{mc.Protocol1_8, 774}, false, func(t *testing.T, v int32, req mc.EncryptionRequest) []byte {
			f := plain(goodSecret, same)(t, v, req)
			_, hl, _ := mc.SplitFrame(f, mc.MaxFrameLength)
			return mc.AppendPacket(nil, 0x01 /* Encryption Response */, append(append([]byte(nil), f[hl+1:]...), 0))
		}, protocolError, "auth_bad_response"},
		{"past the size bound", []int32{774}, false, func(*testing.T, int32, mc.EncryptionRequest) []byte {
			return mc.AppendPacket(nil, 0x01 /* Encryption Response */, make([]byte, 2000))
		}, protocolError, "bad_frame"},
		{"another packet", []int32{774}, false, func(*testing.T, int32, mc.EncryptionRequest) []byte {
			return mc.AppendPacket(nil, mc.PacketLoginPluginResponse, []byte{1, 0})
		}, protocolError, "auth_bad_response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			ss := sessionserver.Start(t)
			ss.AddPlayer(alice)
			srv, be := startBackendServer(t, mcbackend.Config{})
			p, addr := startProxy(t, onlineConfig(t, be, "none", ss.URL, 5*time.Second, 20*time.Second))
			for i, v := range tc.versions {
				ls := mc.LoginStart{Name: []byte(alice.Name), HasUUID: true}
				if tc.withKey {
					ls.Key = &key.key
				}
				c, req := rawOnlineLoginAt(t, addr, v, ls)
				if _, err := c.Write(tc.response(t, v, req)); err != nil {
					t.Fatal(err)
				}
				id, data := readPacket(t, c)
				reason, err := mc.ParseLoginDisconnect(append(mc.AppendVarInt(nil, id), data...))
				if err != nil || !strings.Contains(string(reason), tc.want) {
					t.Fatalf("protocol %d: disconnect %q (%v), want one saying %q", v, reason, err, tc.want)
				}
				waitStats(t, p, "the refusal", func(st proxymetrics.Stats) bool {
					return st.Rejected[tc.reason] == int64(i+1) && st.Active == 0
				})
			}
			if st := p.Stats(); st.Routed != 0 || len(st.Rejected) != 1 {
				t.Fatalf("proxy: %d routed, refusals %v; want none routed, only %s", st.Routed, st.Rejected, tc.reason)
			}
			if q := ss.Queries(); len(q) != 0 {
				t.Fatalf("the session server was asked %+v", q)
			}
			if st := srv.Stats(); st.LoginStarts != 0 {
				t.Fatalf("the backend saw %d logins", st.LoginStarts)
			}
		})
	}
}

// TestOnlineLoginClientLeavesDuringVerdict: a client that sends a good
// Encryption Response and closes while the session server takes its time
// ends its session at once; the verdict, when it comes, is dropped (no
// backend is dialled for it), and the next login goes through.
func TestOnlineLoginClientLeavesDuringVerdict(t *testing.T) {
	checkNoLeaks(t)
	ss := sessionserver.Start(t)
	ss.AddPlayer(alice)
	ss.Delay(500 * time.Millisecond)
	srv, be := startBackendServer(t, mcbackend.Config{Forwarding: mcbackend.ForwardBungeeCord})
	p, addr := startProxy(t, onlineConfig(t, be, "bungeecord", ss.URL, 10*time.Second, 10*time.Second))
	c, req := rawOnlineLoginAt(t, addr, mc.Protocol1_7_10, mc.LoginStart{Name: []byte(alice.Name)})
	_, resp := joinAndRespond(t, ss, mc.Protocol1_7_10, req)
	if _, err := c.Write(resp); err != nil {
		t.Fatal(err)
	}
	waitfor.Value(t, "the hasJoined call", func() int { return len(ss.Queries()) }, func(n int) bool { return n == 1 })
	_ = c.Close()
	waitStats(t, p, "the session to end", func(st proxymetrics.Stats) bool { return st.Active == 0 })
	// The verdict is accepted on the pool and dropped on the loop.
	waitfor.Value(t, "the verdict", p.auth.Accepted, func(n uint64) bool { return n == 1 })
	ss.Delay(0)
	cc := onlineLogin17(t, dial(t, addr), ss)
	echo(t, cc, []byte("after the one who left"))
	if st := p.Stats(); st.Routed != 1 || st.ConnectFailed != 0 || len(st.Rejected) != 1 || st.Rejected["encryption_abandoned"] != 1 {
		t.Fatalf("proxy: %d routed, %d failed connects, refusals %v; want the second login alone routed, the first encryption_abandoned", st.Routed, st.ConnectFailed, st.Rejected)
	}
	if st := srv.Stats(); st.LoginStarts != 1 {
		t.Fatalf("the backend saw %d logins, want the second alone", st.LoginStarts)
	}
}
