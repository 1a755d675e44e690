package mcauth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"
	mcnet "github.com/Tnze/go-mc/net"
	gomccfb8 "github.com/Tnze/go-mc/net/CFB8"
	pk "github.com/Tnze/go-mc/net/packet"

	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/protocol/mc"
)

// The test's packets after encryption: the proxy's stand-in for Login
// Success (the profile), and the play packets echoed through the backend.
const (
	idProfile = 0x02
	idEcho    = 0x10
)

// TestOnlineLoginOverSockets runs whole online-mode logins over loopback
// sockets: a client built from go-mc's pieces (its framing, packets and
// CFB8) and a join to the fake session server; a proxy side built from
// this package and protocol/mc (Encryption Request, Authenticate, our
// CFB8); and a plain echo backend behind it, to which the proxy relays
// the decrypted bytes and whose answers it encrypts back.
func TestOnlineLoginOverSockets(t *testing.T) {
	ss := sessionserver.Start(t)
	ss.AddPlayer(steve)
	a := newAuth(t, Config{SessionServer: ss.URL, PassClientIP: true, Timeout: 10 * time.Second})
	backend := startEcho(t)
	for _, v := range []int32{5, 47, 760, 765, 767} {
		t.Run(fmt.Sprint("protocol ", v), func(t *testing.T) {
			ss.Refuse(false)
			runLogin(t, a, ss, backend, v, true)
		})
	}
	t.Run("refused", func(t *testing.T) {
		ss.Refuse(true)
		runLogin(t, a, ss, backend, 765, false)
	})
}

// runLogin is one login; the proxy side runs in a goroutine of the test.
func runLogin(t *testing.T, a *Authenticator, ss *sessionserver.Server, backend string, v int32, accept bool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	proxyErr := make(chan error, 1)
	go func() { proxyErr <- serveOne(ln, a, backend, v) }()

	conn, err := mcnet.DialMC(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.Socket.SetDeadline(time.Now().Add(20 * time.Second))
	clientErr := clientLogin(conn, ss, v, accept)
	if err := <-proxyErr; err != nil {
		t.Fatalf("proxy side: %v", err)
	}
	if clientErr != nil {
		t.Fatalf("client side: %v", clientErr)
	}
}

// clientLogin is the client: handshake, Login Start, the Encryption
// Request answered after a join, then encrypted packets echoed.
func clientLogin(conn *mcnet.Conn, ss *sessionserver.Server, v int32, accept bool) error {
	if err := conn.WritePacket(pk.Marshal(0x00, pk.VarInt(v), pk.String("localhost"), pk.UnsignedShort(25565), pk.VarInt(2))); err != nil {
		return err
	}
	if err := conn.WritePacket(pk.Marshal(0x00, pk.String(steve.Name))); err != nil {
		return err
	}
	var p pk.Packet
	if err := conn.ReadPacket(&p); err != nil {
		return fmt.Errorf("reading the encryption request: %w", err)
	}
	var serverID, publicKey, token []byte
	if v == 765 { // go-mc's own decoding, the layout of its protocol
		var sid pk.String
		var key, tok pk.ByteArray
		if err := p.Scan(&sid, &key, &tok); err != nil {
			return fmt.Errorf("go-mc scanning the encryption request: %w", err)
		}
		serverID, publicKey, token = []byte(sid), key, tok
	} else {
		req, err := mc.ParseEncryptionRequest(append(mc.AppendVarInt(nil, p.ID), p.Data...), v)
		if err != nil {
			return err
		}
		serverID, publicKey, token = req.ServerID, req.PublicKey, req.VerifyToken
	}
	if p.ID != mc.PacketEncryptionRequest {
		return fmt.Errorf("packet 0x%02x, want the encryption request", p.ID)
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	if err := join(ss, javaHash(serverID, secret, publicKey)); err != nil {
		return err
	}
	k, err := x509.ParsePKIXPublicKey(publicKey)
	if err != nil {
		return err
	}
	encSecret, err := rsa.EncryptPKCS1v15(rand.Reader, k.(*rsa.PublicKey), secret)
	if err != nil {
		return err
	}
	encToken, err := rsa.EncryptPKCS1v15(rand.Reader, k.(*rsa.PublicKey), token)
	if err != nil {
		return err
	}
	resp := pk.Marshal(0x01, pk.ByteArray(encSecret), pk.ByteArray(encToken))
	if v != 765 {
		frame := mc.AppendEncryptionResponse(nil, v, mc.EncryptionResponse{SharedSecret: encSecret, VerifyToken: encToken})
		_, h, _ := mc.SplitFrame(frame, mc.MaxFrameLength)
		resp = pk.Packet{ID: 0x01, Data: frame[h+1:]}
	}
	if err := conn.WritePacket(resp); err != nil {
		return err
	}
	block, _ := aes.NewCipher(secret)
	conn.SetCipher(gomccfb8.NewCFB8Encrypt(block, secret), gomccfb8.NewCFB8Decrypt(block, secret))

	if err := conn.ReadPacket(&p); err != nil {
		return fmt.Errorf("reading the verdict: %w", err)
	}
	if !accept {
		var reason pk.String
		if p.ID != mc.PacketLoginDisconnect || p.Scan(&reason) != nil || !strings.Contains(string(reason), TextUnverified) {
			return fmt.Errorf("packet 0x%02x %q, want the disconnect %q", p.ID, p.Data, TextUnverified)
		}
		return nil
	}
	var id pk.UUID
	var name pk.String
	if p.ID != idProfile || p.Scan(&id, &name) != nil || fmt.Sprintf("%x", id[:]) != steveUUID || name != pk.String(steve.Name) {
		return fmt.Errorf("packet 0x%02x % x, want Steve's profile", p.ID, p.Data)
	}
	// Packets of many sizes; the writes run ahead of the reads.
	rng := mathrand.New(mathrand.NewPCG(uint64(v), 7))
	sent := make([][]byte, 60)
	for i := range sent {
		sent[i] = make([]byte, rng.IntN(5000))
		for j := range sent[i] {
			sent[i][j] = byte(rng.Uint32())
		}
	}
	writeErr := make(chan error, 1)
	go func() {
		for _, b := range sent {
			if err := conn.WritePacket(pk.Packet{ID: idEcho, Data: b}); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}()
	for i, want := range sent {
		if err := conn.ReadPacket(&p); err != nil {
			return fmt.Errorf("echo %d: %w", i, err)
		}
		if p.ID != idEcho || !bytes.Equal(p.Data, want) {
			return fmt.Errorf("echo %d: packet 0x%02x of %d bytes, want %d bytes sent", i, p.ID, len(p.Data), len(want))
		}
	}
	if err := <-writeErr; err != nil {
		return err
	}
	return conn.Close() // ends the relay
}

// javaHash is the server hash computed the way Java does, with BigInteger,
// independently of mc.AppendServerHash.
func javaHash(parts ...[]byte) string {
	h := sha1.New()
	for _, p := range parts {
		h.Write(p)
	}
	n := new(big.Int).SetBytes(h.Sum(nil))
	if n.Bit(159) == 1 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), 160))
	}
	return n.Text(16)
}

func join(ss *sessionserver.Server, hash string) error {
	body, _ := json.Marshal(map[string]string{"accessToken": steve.AccessToken, "selectedProfile": steve.UUID, "serverId": hash})
	resp, err := http.Post(ss.URL+"/session/minecraft/join", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("join: %s", resp.Status)
	}
	return nil
}

// proxyLogin is the proxy side of a login on c up to the verdict, with
// the ciphers on when the client's secret is known.
type proxyLogin struct {
	br       *bufio.Reader
	r        Result
	enc, dec *mc.CFB8
}

func acceptLogin(c net.Conn, a *Authenticator, v int32) (*proxyLogin, error) {
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	hs, err := readFrame(br)
	if err != nil {
		return nil, err
	}
	if h, err := mc.ParseHandshake(hs); err != nil || h.ProtocolVersion != v || h.NextState != 2 {
		return nil, fmt.Errorf("handshake %+v, %v", h, err)
	}
	ls, err := readFrame(br)
	if err != nil {
		return nil, err
	}
	name, err := mc.ParseLoginStart(ls)
	if err != nil {
		return nil, err
	}
	ch := NewChallenge()
	if _, err := c.Write(a.AppendEncryptionRequest(nil, v, &ch)); err != nil {
		return nil, err
	}
	body, err := readFrame(br)
	if err != nil {
		return nil, err
	}
	resp, err := mc.ParseEncryptionResponse(body, v)
	if err != nil {
		return nil, err
	}
	ip, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	verdict := make(chan Result, 1)
	if f := a.Authenticate(Login{Username: string(name), ClientIP: ip.Addr(), Challenge: ch, Response: resp},
		func(r Result) { verdict <- r }); f != nil {
		return nil, f
	}
	clear(body) // Authenticate copied what it needs
	p := &proxyLogin{br: br, r: <-verdict}
	if !p.r.HaveSecret {
		return nil, fmt.Errorf("no secret: %v", p.r.Failure)
	}
	if p.enc, p.dec, err = mc.NewConnCiphers(p.r.SharedSecret[:]); err != nil {
		return nil, err
	}
	return p, nil
}

// send writes one packet, encrypted.
func (p *proxyLogin) send(c net.Conn, id int32, data []byte) error {
	out := mc.AppendPacket(nil, id, data)
	p.enc.XORKeyStream(out, out)
	_, err := c.Write(out)
	return err
}

// serveOne is the proxy side of one login and its relay.
func serveOne(ln net.Listener, a *Authenticator, backend string, v int32) error {
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	p, err := acceptLogin(c, a, v)
	if err != nil {
		return err
	}
	r, br, enc, dec := p.r, p.br, p.enc, p.dec
	if r.Failure != nil {
		if r.Failure.Reason != ReasonRefused {
			return r.Failure
		}
		return p.send(c, mc.PacketLoginDisconnect, mc.AppendString(nil, r.Failure.AppendDisconnectJSON(nil)))
	}
	data := append(append([]byte(nil), r.Profile.UUID[:]...), mc.AppendString(nil, []byte(r.Profile.Name))...)
	if err := p.send(c, idProfile, data); err != nil {
		return err
	}
	b, err := net.Dial("tcp", backend)
	if err != nil {
		return err
	}
	defer b.Close()
	up := make(chan error, 1)
	go func() { // client -> backend: decrypt in place
		up <- relay(b, br, dec)
		_ = b.(*net.TCPConn).CloseWrite()
	}()
	down := relay(c, b, enc) // backend -> client: encrypt in place
	if err := <-up; err != nil {
		return fmt.Errorf("client to backend: %w", err)
	}
	if down != nil {
		return fmt.Errorf("backend to client: %w", down)
	}
	return nil
}

// relay copies src to dst through s, in place, until src ends.
func relay(dst io.Writer, src io.Reader, s *mc.CFB8) error {
	buf := make([]byte, 1500) // odd chunks: the cipher state carries across reads
	for {
		n, err := src.Read(buf)
		if n > 0 {
			s.XORKeyStream(buf[:n], buf[:n])
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func readFrame(br *bufio.Reader) ([]byte, error) {
	var hdr []byte
	for {
		b, err := br.ReadByte()
		if err != nil {
			return nil, err
		}
		hdr = append(hdr, b)
		l, n, err := mc.ReadVarInt(hdr)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			if l < 0 || l > mc.MaxFrameLength {
				return nil, fmt.Errorf("frame length %d", l)
			}
			body := make([]byte, l)
			_, err := io.ReadFull(br, body)
			return body, err
		}
	}
}

// startEcho runs a backend that echoes every connection until t ends.
func startEcho(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Not io.Copy(c, c): TCP to TCP splices through pooled pipes,
			// whose cleanups run as goroutines after the tests, and the
			// leak check would see them.
			_, _ = io.Copy(struct{ io.Writer }{c}, struct{ io.Reader }{c})
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestGoMCBotOnlineLogin is go-mc's own bot (protocol 764) logging in
// online through these pieces: it joins the fake session server through
// RedirectDefaultClient, and the proxy side, once hasJoined answered,
// disconnects it with the authenticated profile, which the bot reports.
func TestGoMCBotOnlineLogin(t *testing.T) {
	ss := sessionserver.Start(t)
	ss.AddPlayer(steve)
	ss.RedirectDefaultClient(t)
	a := newAuth(t, Config{SessionServer: ss.URL, Timeout: 10 * time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	proxyErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			proxyErr <- err
			return
		}
		defer c.Close()
		p, err := acceptLogin(c, a, bot.ProtocolVersion)
		if err != nil {
			proxyErr <- err
			return
		}
		if p.r.Failure != nil {
			proxyErr <- p.r.Failure
			return
		}
		msg := fmt.Sprintf(`{"text":"authenticated %s %x"}`, p.r.Profile.Name, p.r.Profile.UUID)
		proxyErr <- p.send(c, mc.PacketLoginDisconnect, mc.AppendString(nil, []byte(msg)))
	}()

	client := bot.NewClient()
	client.Auth = bot.Auth{Name: steve.Name, UUID: steve.UUID, AsTk: steve.AccessToken}
	var d closingDialer
	defer d.close()
	err = client.JoinServerWithOptions(ln.Addr().String(), bot.JoinOptions{MCDialer: &d})
	if perr := <-proxyErr; perr != nil {
		t.Fatalf("proxy side: %v (bot: %v)", perr, err)
	}
	var de bot.DisconnectErr
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "authenticated Steve "+steveUUID) {
		t.Fatalf("bot: %v, want the disconnect with Steve's profile", err)
	}
	if j := ss.Joins(); len(j) != 1 || j[0].SelectedProfile != steveUUID {
		t.Fatalf("joins %+v, want the bot's", j)
	}
}

// closingDialer dials for go-mc's bot with a deadline and keeps the
// connection, which the bot leaves open when its login fails.
type closingDialer struct{ conn *mcnet.Conn }

func (d *closingDialer) DialMCContext(ctx context.Context, addr string) (*mcnet.Conn, error) {
	conn, err := mcnet.DefaultDialer.DialMCContext(ctx, addr)
	if err != nil {
		return nil, err
	}
	d.conn = conn
	return conn, conn.Socket.SetDeadline(time.Now().Add(20 * time.Second))
}

func (d *closingDialer) close() {
	if d.conn != nil {
		_ = d.conn.Close()
	}
}
