package mcauth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/protocol/mc"
)

const steveUUID = "b50ad385829d3141a2167e7d7539ba7f"

var steve = sessionserver.Player{Name: "Steve", UUID: steveUUID, AccessToken: "steve-token",
	Properties: []sessionserver.Property{{Name: "textures", Value: "dGV4dHVyZXM=", Signature: "c2lnbmF0dXJl"}}}

func newAuth(t *testing.T, cfg Config) *Authenticator {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return a
}

// encryptFor is what a client does with the Encryption Request's key.
func encryptFor(t testing.TB, der, msg []byte) []byte {
	t.Helper()
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := rsa.EncryptPKCS1v15(rand.Reader, k.(*rsa.PublicKey), msg)
	if err != nil {
		t.Fatal(err)
	}
	return ct
}

// clientResponse is a client's Encryption Response to a's request with c.
func clientResponse(t testing.TB, a *Authenticator, c *Challenge, secret []byte) mc.EncryptionResponse {
	req, err := mc.ParseEncryptionRequest(frameBody(t, a.AppendEncryptionRequest(nil, 765, c)), 765)
	if err != nil {
		t.Fatal(err)
	}
	return mc.EncryptionResponse{SharedSecret: encryptFor(t, req.PublicKey, secret), VerifyToken: encryptFor(t, req.PublicKey, req.VerifyToken)}
}

func frameBody(t testing.TB, frame []byte) []byte {
	t.Helper()
	n, h, err := mc.SplitFrame(frame, mc.MaxFrameLength)
	if err != nil || n != len(frame) {
		t.Fatalf("SplitFrame: %d, %v", n, err)
	}
	return frame[h:n]
}

func TestKeyAndRequest(t *testing.T) {
	a := newAuth(t, Config{})
	k, err := x509.ParsePKIXPublicKey(a.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if n := k.(*rsa.PublicKey).N.BitLen(); n != KeyBits {
		t.Fatalf("key of %d bits, want %d", n, KeyBits)
	}
	c1, c2 := NewChallenge(), NewChallenge()
	if c1 == c2 {
		t.Fatal("two challenges share a verify token")
	}
	for _, v := range []int32{5, 47, 766} {
		req, err := mc.ParseEncryptionRequest(frameBody(t, a.AppendEncryptionRequest(nil, v, &c1)), v)
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		if len(req.ServerID) != 0 || !bytes.Equal(req.PublicKey, a.PublicKey()) || !bytes.Equal(req.VerifyToken, c1.token[:]) || !req.ShouldAuthenticate {
			t.Fatalf("version %d: %+v", v, req)
		}
	}
}

func TestNewRefusesBadSessionServers(t *testing.T) {
	for _, u := range []string{"sessionserver.mojang.com", "ftp://example.com", "http://", "http://h/x?y=1", "http://[::1"} {
		if a, err := New(Config{SessionServer: u}); err == nil {
			_ = a.Close(context.Background())
			t.Errorf("session server %q was taken", u)
		}
	}
	a := newAuth(t, Config{SessionServer: "http://127.0.0.1:8080/"})
	if a.cfg.SessionServer != "http://127.0.0.1:8080" {
		t.Fatalf("base URL %q kept its slash", a.cfg.SessionServer)
	}
}

func TestVerify(t *testing.T) {
	a := newAuth(t, Config{})
	c := NewChallenge()
	secret := []byte("0123456789abcdef")
	good := clientResponse(t, a, &c, secret)
	got, f := a.Verify(&c, good, nil)
	if f != nil || string(got[:]) != string(secret) {
		t.Fatalf("Verify = %x, %v", got, f)
	}
	other := NewChallenge()
	for name, c := range map[string]struct {
		ch     *Challenge
		resp   mc.EncryptionResponse
		reason string
	}{
		"another login's token": {&other, good, ReasonBadToken},
		"token not encrypted":   {&c, mc.EncryptionResponse{SharedSecret: good.SharedSecret, VerifyToken: c.token[:]}, ReasonBadToken},
		"secret not encrypted":  {&c, mc.EncryptionResponse{SharedSecret: secret, VerifyToken: good.VerifyToken}, ReasonBadSecret},
		"secret of 15 bytes":    {&c, mc.EncryptionResponse{SharedSecret: encryptFor(t, a.PublicKey(), secret[:15]), VerifyToken: good.VerifyToken}, ReasonBadSecret},
		"secret of 32 bytes":    {&c, mc.EncryptionResponse{SharedSecret: encryptFor(t, a.PublicKey(), append(secret, secret...)), VerifyToken: good.VerifyToken}, ReasonBadSecret},
		"signed, no player key": {&c, mc.EncryptionResponse{SharedSecret: good.SharedSecret, Signed: true, Salt: 1, Signature: []byte{1}}, ReasonBadToken},
	} {
		_, f := a.Verify(c.ch, c.resp, nil)
		if f == nil || f.Reason != c.reason || f.Text() != TextProtocolError {
			t.Errorf("%s: %v, want %s", name, f, c.reason)
		}
	}
}

// TestVerifySigned is a 1.19 to 1.19.2 client that signs the verify token
// with its chat key instead of encrypting it.
func TestVerifySigned(t *testing.T) {
	a := newAuth(t, Config{})
	c := NewChallenge()
	player, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	playerDER, _ := x509.MarshalPKIXPublicKey(&player.PublicKey)
	salt := int64(-1234567)
	h := sha256.Sum256(binary.BigEndian.AppendUint64(append([]byte(nil), c.token[:]...), uint64(salt)))
	sig, err := rsa.SignPKCS1v15(rand.Reader, player, crypto.SHA256, h[:])
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("fedcba9876543210")
	resp := mc.EncryptionResponse{SharedSecret: encryptFor(t, a.PublicKey(), secret), Signed: true, Salt: salt, Signature: sig}
	if got, f := a.Verify(&c, resp, playerDER); f != nil || string(got[:]) != string(secret) {
		t.Fatalf("Verify = %x, %v", got, f)
	}
	resp.Salt++
	if _, f := a.Verify(&c, resp, playerDER); f == nil || f.Reason != ReasonBadToken {
		t.Fatalf("another salt: %v", f)
	}
}

// authenticate runs one login through Authenticate and waits for its
// verdict.
func authenticate(t *testing.T, a *Authenticator, l Login) Result {
	t.Helper()
	res := make(chan Result, 1)
	if f := a.Authenticate(l, func(r Result) { res <- r }); f != nil {
		t.Fatalf("Authenticate: %v", f)
	}
	select {
	case r := <-res:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no verdict")
	}
	panic("unreachable")
}

// joinedLogin is a login of Steve whose client joined the fake session
// server with the right server hash.
func joinedLogin(t *testing.T, a *Authenticator, ss *sessionserver.Server, ip netip.Addr) Login {
	t.Helper()
	c := NewChallenge()
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	hash := string(mc.AppendServerHash(nil, nil, secret, a.PublicKey()))
	body, _ := json.Marshal(map[string]string{"accessToken": steve.AccessToken, "selectedProfile": steve.UUID, "serverId": hash})
	resp, err := http.Post(ss.URL+"/session/minecraft/join", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("join: %s", resp.Status)
	}
	return Login{Username: steve.Name, ClientIP: ip, Challenge: c, Response: clientResponse(t, a, &c, secret)}
}

func TestAuthenticate(t *testing.T) {
	ss := sessionserver.Start(t)
	ss.AddPlayer(steve)
	loop := netip.MustParseAddr("127.0.0.1")
	a := newAuth(t, Config{SessionServer: ss.URL, Timeout: 10 * time.Second})
	r := authenticate(t, a, joinedLogin(t, a, ss, loop))
	want, _ := mc.ParseUUID([]byte(steveUUID))
	if r.Failure != nil || !r.HaveSecret || r.Profile.UUID != want || r.Profile.Name != "Steve" ||
		len(r.Profile.Properties) != 1 || r.Profile.Properties[0] != (Property{Name: "textures", Value: "dGV4dHVyZXM=", Signature: "c2lnbmF0dXJl"}) {
		t.Fatalf("result %+v", r)
	}
	if q := ss.Queries(); len(q) != 1 || q[0].HasIP || q[0].ServerID != r.ServerHash || q[0].Username != "Steve" {
		t.Fatalf("queries %+v (the ip goes only when configured)", q)
	}
	if a.Accepted() != 1 {
		t.Fatalf("accepted %d", a.Accepted())
	}

	// With PassClientIP, the address goes along, and a join from elsewhere is refused.
	withIP := newAuth(t, Config{SessionServer: ss.URL, PassClientIP: true, Timeout: 10 * time.Second})
	if r := authenticate(t, withIP, joinedLogin(t, withIP, ss, loop)); r.Failure != nil {
		t.Fatalf("with the join's address: %v", r.Failure)
	}
	if q := ss.Queries(); !q[len(q)-1].HasIP || q[len(q)-1].IP != "127.0.0.1" {
		t.Fatalf("last query %+v, want ip=127.0.0.1", q[len(q)-1])
	}
	r = authenticate(t, withIP, joinedLogin(t, withIP, ss, netip.MustParseAddr("203.0.113.7")))
	if r.Failure == nil || r.Failure.Reason != ReasonRefused || r.Failure.Text() != TextUnverified || !r.HaveSecret {
		t.Fatalf("join from another address: %+v", r)
	}

	// A bad response is counted, and has no secret to encrypt with.
	l := joinedLogin(t, a, ss, loop)
	l.Challenge = NewChallenge()
	if r := authenticate(t, a, l); r.Failure == nil || r.Failure.Reason != ReasonBadToken || r.HaveSecret {
		t.Fatalf("wrong token: %+v", r)
	}
	if n := a.Failures(ReasonBadToken); n != 1 {
		t.Fatalf("bad token counted %d times", n)
	}
}

func TestAuthenticateSessionServerFailures(t *testing.T) {
	ss := sessionserver.Start(t)
	ss.AddPlayer(steve)
	loop := netip.MustParseAddr("127.0.0.1")
	a := newAuth(t, Config{SessionServer: ss.URL, Timeout: 500 * time.Millisecond})
	for _, c := range []struct {
		name   string
		set    func()
		reason string
		text   string
	}{
		{"refused", func() { ss.Refuse(true) }, ReasonRefused, TextUnverified},
		{"error", func() { ss.Refuse(false); ss.FailWith(http.StatusInternalServerError) }, ReasonError, TextAuthServersDown},
		{"timeout", func() { ss.FailWith(0); ss.Delay(2 * time.Second) }, ReasonTimeout, TextAuthServersDown},
	} {
		c.set()
		start := time.Now()
		r := authenticate(t, a, joinedLogin(t, a, ss, loop))
		if r.Failure == nil || r.Failure.Reason != c.reason || r.Failure.Text() != c.text {
			t.Fatalf("%s: %+v", c.name, r.Failure)
		}
		if c.reason == ReasonTimeout && time.Since(start) > 1500*time.Millisecond {
			t.Fatalf("timeout after %v, want about 500ms", time.Since(start))
		}
		if a.Failures(c.reason) != 1 {
			t.Fatalf("%s counted %d times", c.name, a.Failures(c.reason))
		}
		var js struct{ Text string }
		if err := json.Unmarshal(r.Failure.AppendDisconnectJSON(nil), &js); err != nil || js.Text != c.text {
			t.Fatalf("%s: disconnect JSON %q, %v", c.name, r.Failure.AppendDisconnectJSON(nil), err)
		}
	}

	// Session servers that are not there.
	down := newAuth(t, Config{SessionServer: "http://127.0.0.1:1", Timeout: 5 * time.Second})
	if r := authenticate(t, down, joinedLogin(t, down, ss, loop)); r.Failure == nil || r.Failure.Reason != ReasonError {
		t.Fatalf("no server: %+v", r.Failure)
	}
}

// TestHasJoinedBadAnswers is a session server that answers 200 with
// something that is not a profile.
func TestHasJoinedBadAnswers(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":     `{"id":`,
		"bad UUID":     `{"id":"not-a-uuid","name":"Steve","properties":[]}`,
		"no name":      `{"id":"` + steveUUID + `","name":"","properties":[]}`,
		"far too long": `{"id":"` + steveUUID + `","name":"Steve","properties":[{"name":"x","value":"` + strings.Repeat("a", maxProfileBytes) + `"}]}`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) }))
		a := newAuth(t, Config{SessionServer: srv.URL})
		_, f := a.HasJoined(context.Background(), "Steve", "hash", netip.Addr{})
		srv.Close()
		if f == nil || f.Reason != ReasonError || f.Text() != TextAuthServersDown {
			t.Errorf("%s: %v, want %s", name, f, ReasonError)
		}
	}
}

// TestAuthenticateBackedUp fills a one-worker pool: a login that waits
// for the worker past its time is slow, one that finds the queue full is
// refused at once.
func TestAuthenticateBackedUp(t *testing.T) {
	ss := sessionserver.Start(t)
	ss.AddPlayer(steve)
	ss.Refuse(true) // quick answers: the worker is held by the callback
	loop := netip.MustParseAddr("127.0.0.1")
	const timeout = 300 * time.Millisecond
	a := newAuth(t, Config{SessionServer: ss.URL, Timeout: timeout, Workers: 1, Queue: 1})
	entered, release := make(chan struct{}), make(chan struct{})
	if f := a.Authenticate(joinedLogin(t, a, ss, loop), func(Result) { close(entered); <-release }); f != nil {
		t.Fatal(f)
	}
	<-entered // the only worker is busy
	second := make(chan Result, 1)
	if f := a.Authenticate(joinedLogin(t, a, ss, loop), func(r Result) { second <- r }); f != nil {
		t.Fatal(f)
	}
	f := a.Authenticate(joinedLogin(t, a, ss, loop), func(Result) { t.Error("a refused login got a verdict") })
	if f == nil || f.Reason != ReasonPoolFull || f.Text() != TextAuthServersDown {
		t.Fatalf("third login: %v, want %s", f, ReasonPoolFull)
	}
	time.Sleep(timeout + 100*time.Millisecond)
	close(release)
	r := <-second
	if r.Failure == nil || r.Failure.Reason != ReasonSlow || r.HaveSecret {
		t.Fatalf("second login: %+v, want %s", r, ReasonSlow)
	}
	if a.Failures(ReasonPoolFull) != 1 || a.Failures(ReasonSlow) != 1 {
		t.Fatalf("counts: pool full %d, slow %d", a.Failures(ReasonPoolFull), a.Failures(ReasonSlow))
	}
}

func TestAuthenticateCopiesTheResponse(t *testing.T) {
	ss := sessionserver.Start(t)
	ss.AddPlayer(steve)
	ss.Delay(100 * time.Millisecond)
	a := newAuth(t, Config{SessionServer: ss.URL, Timeout: 10 * time.Second, Workers: 1})
	l := joinedLogin(t, a, ss, netip.MustParseAddr("127.0.0.1"))
	res := make(chan Result, 1)
	if f := a.Authenticate(l, func(r Result) { res <- r }); f != nil {
		t.Fatal(f)
	}
	clear(l.Response.SharedSecret) // the read buffer is reused at once
	clear(l.Response.VerifyToken)
	if r := <-res; r.Failure != nil {
		t.Fatalf("%v", r.Failure)
	}
}

func TestClosed(t *testing.T) {
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := a.Authenticate(Login{}, func(Result) { t.Error("verdict after Close") })
	if f == nil || f.Reason != ReasonPoolFull || !strings.Contains(f.Error(), "closed") || !errors.Is(f, f.Err) {
		t.Fatalf("after Close: %v", f)
	}
}

// BenchmarkDecryptPKCS1v15 is one RSA-1024 decryption; Verify does two.
func BenchmarkDecryptPKCS1v15(b *testing.B) {
	a, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	ct := encryptFor(b, a.PublicKey(), make([]byte, 16))
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := rsa.DecryptPKCS1v15(nil, a.key, ct); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU starts counting the process's CPU time; the function it
// returns reports it per operation (cpu-ns/op), which other work on a
// shared machine inflates far less than the wall clock.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() { b.ReportMetric(float64((cpu()-start).Nanoseconds())/float64(b.N), "cpu-ns/op") }
}

// BenchmarkVerify is what a login costs before the session server call.
func BenchmarkVerify(b *testing.B) {
	a, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	c := NewChallenge()
	resp := clientResponse(b, a, &c, make([]byte, 16))
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if _, f := a.Verify(&c, resp, nil); f != nil {
			b.Fatal(f)
		}
	}
}
