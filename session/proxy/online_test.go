package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

const aliceUUID = "3f1e6bd4a4c84a5c9b0e2f7d1c5a9e21"

var alice = sessionserver.Player{Name: "Alice", UUID: aliceUUID, AccessToken: "alice-token",
	Properties: []sessionserver.Property{{Name: "textures", Value: "dGV4dHVyZXM=", Signature: "c2lnbmF0dXJl"}}}

var aliceAuth = bot.Auth{Name: alice.Name, UUID: alice.UUID, AsTk: alice.AccessToken}

// onlineConfig is offlineConfig with login: online against the session
// server at url, with the given online_mode timeouts.
func onlineConfig(t testing.TB, backend, forwarding, url string, timeout, encTimeout time.Duration) string {
	t.Helper()
	cfg := strings.Replace(offlineConfig(t, backend, forwarding), "login: offline", "login: online", 1)
	return fmt.Sprintf("online_mode: {session_server: %q, timeout: %v, encryption_timeout: %v}\n", url, timeout, encTimeout) + cfg
}

// TestGoMCBotOnlineLoginThroughProxy: go-mc's bot (protocol 764) logs in
// online through the proxy: it joins the fake session server
// (RedirectDefaultClient), the proxy asks hasJoined, encrypts the client
// connection and logs the fake backend in with each forwarding; play
// packets go both ways through the ciphers, compressed or not.
func TestGoMCBotOnlineLoginThroughProxy(t *testing.T) {
	for _, fw := range []struct {
		name    string
		backend mcbackend.Forwarding
	}{{"velocity", mcbackend.ForwardVelocity}, {"bungeecord", mcbackend.ForwardBungeeCord}} {
		for _, compression := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/compression=%t", fw.name, compression), func(t *testing.T) {
				checkNoLeaks(t)
				ss := sessionserver.Start(t)
				ss.AddPlayer(alice)
				ss.RedirectDefaultClient(t)
				srv, be := startBackendServer(t, mcbackend.Config{Compression: compression, CompressionThreshold: 64,
					Forwarding: fw.backend, ForwardingSecret: []byte(testForwardingSecret)})
				p, addr := startProxy(t, onlineConfig(t, be, fw.name, ss.URL, 5*time.Second, 5*time.Second))
				b := gomcbot.JoinAs(t, addr, aliceAuth, 10*time.Second)
				b.Echo(t, bytes.Repeat([]byte("encrypted "), 300))
				b.Echo(t, []byte("small"))
				for i := range 20 {
					b.Echo(t, []byte(fmt.Sprintf("packet %d", i)))
				}
				waitStats(t, p, "the routed session", func(st proxymetrics.Stats) bool { return st.Routed == 1 && st.FramesC2S >= 22 && st.FramesS2C >= 22 })
				if q := ss.Queries(); len(q) != 1 || q[0].Username != alice.Name || q[0].HasIP {
					t.Fatalf("hasJoined queries %+v, want one for %s without ip", q, alice.Name)
				}
				expectOnePlayerThenEnd(t, srv, p, b, fw.backend)
			})
		}
	}
}

// TestOnlineLoginSessionServerRefusals: the session server says no, fails,
// answers too late, or is down: go-mc's bot reads vanilla's text (sent
// encrypted, as the bot already encrypts), the proxy counts the reason and
// the backend never hears of the player.
func TestOnlineLoginSessionServerRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(*sessionserver.Server)
		down   bool
		want   string
		reason string
	}{
		{"refused", func(s *sessionserver.Server) { s.Refuse(true) }, false, "Failed to verify username!", "auth_refused"},
		{"error", func(s *sessionserver.Server) { s.FailWith(500) }, false, "Authentication servers are down", "auth_unavailable"},
		{"too slow", func(s *sessionserver.Server) { s.Delay(5 * time.Second) }, false, "Authentication servers are down", "auth_unavailable"},
		{"down", func(*sessionserver.Server) {}, true, "Authentication servers are down", "auth_unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			ss := sessionserver.Start(t)
			ss.AddPlayer(alice)
			ss.RedirectDefaultClient(t)
			tc.setup(ss)
			url := ss.URL
			if tc.down {
				url = closedURL(t)
			}
			srv, be := startBackendServer(t, mcbackend.Config{Forwarding: mcbackend.ForwardVelocity, ForwardingSecret: []byte(testForwardingSecret)})
			p, addr := startProxy(t, onlineConfig(t, be, "velocity", url, 500*time.Millisecond, 5*time.Second))
			c := bot.NewClient()
			c.Auth = aliceAuth
			d := &keptDialer{d: gomcbot.Dialer{D: 10 * time.Second}}
			err := c.JoinServerWithOptions(addr, bot.JoinOptions{MCDialer: d})
			if d.conn != nil {
				_ = d.conn.Close()
			}
			var de bot.DisconnectErr
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("login error %v, want a disconnect saying %q", err, tc.want)
			}
			waitStats(t, p, "the refusal", func(st proxymetrics.Stats) bool {
				return st.Rejected[tc.reason] == 1 && st.Active == 0 && st.Routed == 0
			})
			if st := srv.Stats(); st.PlayStarted != 0 {
				t.Fatalf("the backend saw %d players", st.PlayStarted)
			}
		})
	}
}

// closedURL is the URL of a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr
}

// rawOnlineLogin sends a handshake and Login Start for protocol 764 to the
// proxy at addr and returns the connection and the Encryption Request.
func rawOnlineLogin(t *testing.T, addr string) (net.Conn, mc.EncryptionRequest) {
	t.Helper()
	return rawOnlineLoginAt(t, addr, 764, mc.LoginStart{Name: []byte(alice.Name)})
}

// rawOnlineLoginAt sends a handshake and the Login Start ls for protocol v
// to the proxy at addr and returns the connection and the Encryption
// Request.
func rawOnlineLoginAt(t *testing.T, addr string, v int32, start mc.LoginStart) (net.Conn, mc.EncryptionRequest) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	out := mc.AppendHandshake(nil, mc.Handshake{ProtocolVersion: v, Address: []byte("localhost"), Port: 25565, NextState: 2})
	ls := mc.AppendLoginStart(nil, v, start)
	out = append(append(out, mc.AppendVarInt(nil, int32(len(ls)))...), ls...)
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	req, err := mc.ParseEncryptionRequest(readFrameBody(t, c), v)
	if err != nil {
		t.Fatalf("encryption request: %v", err)
	}
	return c, req
}

// readFrameBody reads one uncompressed frame from c and returns its body.
func readFrameBody(t *testing.T, c net.Conn) []byte {
	t.Helper()
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		n, hl, err := mc.SplitFrame(buf, mc.MaxFrameLength)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return buf[hl:n]
		}
		k, err := c.Read(chunk)
		if err != nil {
			t.Fatalf("reading a frame (%d bytes so far): %v", len(buf), err)
		}
		buf = append(buf, chunk[:k]...)
	}
}

// TestOnlineLoginClientFaults: a wrong verify token, a malformed response
// and a client that stalls after the Encryption Request get vanilla's
// text in the clear (no secret was agreed) and a counted reason.
func TestOnlineLoginClientFaults(t *testing.T) {
	for _, tc := range []struct {
		name     string
		response func(t *testing.T, req mc.EncryptionRequest) []byte // a whole frame; nil: stall
		want     string
		reason   string
	}{
		{"wrong verify token", func(t *testing.T, req mc.EncryptionRequest) []byte {
			pub := parseRSA(t, req.PublicKey)
			secret, token := make([]byte, 16), []byte{1, 2, 3, 4}
			if bytes.Equal(token, req.VerifyToken) {
				token[0]++
			}
			es, _ := rsa.EncryptPKCS1v15(rand.Reader, pub, secret)
			et, _ := rsa.EncryptPKCS1v15(rand.Reader, pub, token)
			return mc.AppendEncryptionResponse(nil, 764, mc.EncryptionResponse{SharedSecret: es, VerifyToken: et})
		}, "Protocol error", "auth_bad_response"},
		{"malformed response", func(*testing.T, mc.EncryptionRequest) []byte {
			return mc.AppendPacket(nil, 0x01, []byte{0x7f}) // Encryption Response, a length past the data
		}, "Protocol error", "auth_bad_response"},
		{"stalls", nil, "Took too long to log in", "encryption_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			ss := sessionserver.Start(t)
			ss.AddPlayer(alice)
			_, be := startBackendServer(t, mcbackend.Config{})
			p, addr := startProxy(t, onlineConfig(t, be, "none", ss.URL, 5*time.Second, 300*time.Millisecond))
			c, req := rawOnlineLogin(t, addr)
			if len(req.VerifyToken) != 4 || !req.ShouldAuthenticate {
				t.Fatalf("encryption request %+v", req)
			}
			if tc.response != nil {
				if _, err := c.Write(tc.response(t, req)); err != nil {
					t.Fatal(err)
				}
			}
			reason, err := mc.ParseLoginDisconnect(readFrameBody(t, c))
			if err != nil || !strings.Contains(string(reason), tc.want) {
				t.Fatalf("disconnect %q (%v), want one saying %q", reason, err, tc.want)
			}
			waitStats(t, p, "the refusal", func(st proxymetrics.Stats) bool {
				return st.Rejected[tc.reason] == 1 && st.Active == 0 && st.Routed == 0
			})
			if q := ss.Queries(); len(q) != 0 {
				t.Fatalf("the session server was asked %+v", q)
			}
		})
	}
}

func parseRSA(t *testing.T, der []byte) *rsa.PublicKey {
	t.Helper()
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		t.Fatal(err)
	}
	return k.(*rsa.PublicKey)
}

// cryptConn is a client connection after an online login: what it writes
// is encrypted, what it reads decrypted, in place or in a reused buffer
// (no allocation once warm).
type cryptConn struct {
	net.Conn
	enc, dec *mc.CFB8
	out      []byte
}

func (c *cryptConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.dec.XORKeyStream(p[:n], p[:n])
	return n, err
}

func (c *cryptConn) Write(p []byte) (int, error) {
	c.out = append(c.out[:0], p...)
	c.enc.XORKeyStream(c.out, c.out)
	return c.Conn.Write(c.out)
}

// onlineLogin17 logs c in online, as alice, with protocol 1.7.10, doing
// what her client does (the join on ss, the Encryption Response), and
// returns the encrypted connection once Login Success has arrived.
func onlineLogin17(t testing.TB, c net.Conn, ss *sessionserver.Server) net.Conn {
	t.Helper()
	v := int32(mc.Protocol1_7_10)
	if _, err := c.Write(append(handshake(v, "localhost", mc.NextStateLogin), loginStart(alice.Name)...)); err != nil {
		t.Fatal(err)
	}
	id, data := readPacket(t, c)
	req, err := mc.ParseEncryptionRequest(append(mc.AppendVarInt(nil, id), data...), v)
	if err != nil {
		t.Fatalf("encryption request: %v", err)
	}
	secret, er := joinAndRespond(t, ss, v, req)
	if _, err := c.Write(er); err != nil { // a whole frame
		t.Fatal(err)
	}
	cc := &cryptConn{Conn: c}
	if cc.enc, cc.dec, err = mc.NewConnCiphers(secret); err != nil {
		t.Fatal(err)
	}
	for {
		switch id, data := readPacket(t, cc); id {
		case mc.PacketLoginSuccess:
			return cc
		case mc.PacketLoginDisconnect:
			t.Fatalf("disconnected during login: %s", data)
		}
	}
}

// joinAndRespond does what alice's client does on an Encryption Request
// req of protocol v: it makes a shared secret, joins on ss with the server
// hash, and returns the secret and the whole Encryption Response frame.
func joinAndRespond(t testing.TB, ss *sessionserver.Server, v int32, req mc.EncryptionRequest) (secret, frame []byte) {
	t.Helper()
	secret = make([]byte, 16)
	_, _ = rand.Read(secret)
	hash := mc.AppendServerHash(nil, req.ServerID, secret, req.PublicKey)
	body := fmt.Sprintf(`{"accessToken":%q,"selectedProfile":%q,"serverId":%q}`, alice.AccessToken, alice.UUID, hash)
	resp, err := http.Post(ss.URL+"/session/minecraft/join", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("join: %s", resp.Status)
	}
	pub, _ := x509.ParsePKIXPublicKey(req.PublicKey)
	es, _ := rsa.EncryptPKCS1v15(rand.Reader, pub.(*rsa.PublicKey), secret)
	et, _ := rsa.EncryptPKCS1v15(rand.Reader, pub.(*rsa.PublicKey), req.VerifyToken)
	return secret, mc.AppendEncryptionResponse(nil, v, mc.EncryptionResponse{SharedSecret: es, VerifyToken: et})
}

// TestOnlineRelayRawClient: a 1.7.10 client logged in online through
// bungeecord forwarding relays play packets both ways, encrypted on its
// side and in the clear on the backend's, and they are counted as frames.
func TestOnlineRelayRawClient(t *testing.T) {
	checkNoLeaks(t)
	ss := sessionserver.Start(t)
	ss.AddPlayer(alice)
	srv, be := startBackendServer(t, mcbackend.Config{Forwarding: mcbackend.ForwardBungeeCord})
	p, addr := startProxy(t, onlineConfig(t, be, "bungeecord", ss.URL, 5*time.Second, 5*time.Second))
	c := onlineLogin17(t, dial(t, addr), ss)
	for i := range 50 {
		echo(t, c, bytes.Repeat([]byte{byte(i)}, 1+i*40))
	}
	waitStats(t, p, "the frames", func(st proxymetrics.Stats) bool { return st.FramesC2S == 52 && st.FramesS2C == 50 && st.Unframed == 0 })
	if st := srv.Stats(); st.PlayStarted != 1 || st.Rejected() != 0 {
		t.Fatalf("backend: %d in play, %d rejected", st.PlayStarted, st.Rejected())
	}
	_ = c.Close()
	waitStats(t, p, "the session to end", func(st proxymetrics.Stats) bool { return st.Active == 0 })
}

// TestHandOverKeepsOnlineSessionsHere: to a new process that reads only
// version 1 of the state message (its ready message names no later one:
// HandOverOptions.StateVersion 0), which cannot carry cipher state, an
// encrypted session is not handed over: it stays in the old proxy and goes
// on relaying there, its streams intact.
func TestHandOverKeepsOnlineSessionsHere(t *testing.T) {
	ss := sessionserver.Start(t)
	ss.AddPlayer(alice)
	_, be := startBackendServer(t, mcbackend.Config{Forwarding: mcbackend.ForwardBungeeCord})
	cfg := onlineConfig(t, be, "bungeecord", ss.URL, 5*time.Second, 5*time.Second)
	oldP, addr := startProxy(t, cfg)
	newP, _ := startProxy(t, cfg)
	c := onlineLogin17(t, dial(t, addr), ss)
	echo(t, c, []byte("before"))
	send, recv := handoverPair(t)
	took := make(chan int, 1)
	go func() {
		n, err := newP.TakeOver(recv)
		if err != nil {
			t.Errorf("TakeOver: %v", err)
		}
		recv.Close()
		took <- n
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := oldP.HandOver(ctx, send, HandOverOptions{Stall: 300 * time.Millisecond, Acked: true, AckEach: true})
	send.Close()
	// The hand-over ends as one that stopped moving, the session still here.
	if n != 0 || <-took != 0 || err == nil || !strings.Contains(err.Error(), "1 sessions still here") {
		t.Fatalf("HandOver sent %d sessions (%v), want none and the session left here", n, err)
	}
	for i := range 10 {
		echo(t, c, []byte(fmt.Sprintf("after %d", i)))
	}
	if st := oldP.Stats(); st.Active != 1 || st.HandedOver != 0 {
		t.Fatalf("old proxy: %d sessions, %d handed over; want 1, 0", st.Active, st.HandedOver)
	}
	if st := newP.Stats(); st.Active != 0 {
		t.Fatalf("new proxy has %d sessions, want 0", st.Active)
	}
}
