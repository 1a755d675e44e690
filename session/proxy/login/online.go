package login

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"

	"github.com/tidegate/tidegate/internal/keyed"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcauth"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/handover"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// NewAuthenticator returns the proxy's authenticator for cfg, nil when no
// group has login: online (a reload cannot add one: config.RestartChanges).
func NewAuthenticator(cfg *config.Config) (*mcauth.Authenticator, error) {
	if !cfg.OnlineGroups() {
		return nil, nil
	}
	a := cfg.Auth
	return mcauth.New(mcauth.Config{SessionServer: a.SessionServer, PassClientIP: a.PreventProxyConnections,
		Timeout: a.Timeout, Workers: a.Workers, Queue: a.Queue})
}

// CloseAuthenticator closes a, if any (see mcauth.Authenticator.Close).
func CloseAuthenticator(ctx context.Context, a *mcauth.Authenticator) error {
	if a == nil {
		return nil
	}
	return a.Close(ctx)
}

// ErrNoVerdict is why a login whose verdict did not come in time ended.
var ErrNoVerdict = errors.New("no verdict from the authenticator in time")

// MaxEncryptionResponse bounds an Encryption Response body: two RSA-1024
// blocks, or a block, a salt and a signature of at most 4096 bits.
const MaxEncryptionResponse = 1024

// Online is the client side of an online-mode login (login: online) from
// Login Start to the verdict: the challenge the Encryption Request
// carried, and the client's Login Start, kept for after the verdict.
type Online struct {
	Challenge mcauth.Challenge
	// LoginStart is the client's Login Start body, copied.
	LoginStart []byte
	// Asked is when the Encryption Request was sent, on the loop's clock.
	Asked int64
}

// NewOnline starts the online-mode login of a client of protocol version v
// whose Login Start body is loginStart: it returns the login's state and
// the Encryption Request frame to send.
func NewOnline(a *mcauth.Authenticator, v int32, loginStart []byte) (*Online, []byte) {
	o := &Online{Challenge: mcauth.NewChallenge(), LoginStart: append([]byte(nil), loginStart...)}
	return o, a.AppendEncryptionRequest(nil, v, &o.Challenge)
}

// Authenticate parses the client's Encryption Response body (ID and data;
// it may alias a read buffer) and queues the login of b's player, from a
// client of protocol v at ip, on a's pool: done gets the verdict, on a
// worker goroutine. The error, when the response is malformed or the pool
// full, is the verdict at once, and done is not called.
func (o *Online) Authenticate(a *mcauth.Authenticator, b *Backend, resp []byte, v int32, ip string, done func(mcauth.Result)) error {
	r, err := mc.ParseEncryptionResponse(resp, v)
	if err != nil {
		return fmt.Errorf("encryption response of protocol %d: %w", v, err)
	}
	l := mcauth.Login{Username: string(b.name), Challenge: o.Challenge, Response: r}
	l.ClientIP, _ = netip.ParseAddr(ip) // invalid, so not passed, if it is not an address
	if b.key != nil {
		l.PlayerKey = b.key.PublicKey
	}
	if f := a.Authenticate(l, done); f != nil {
		return f
	}
	return nil
}

// Ciphers are the AES/CFB8 streams of an online session's client
// connection: Encrypt for what goes to the client, Decrypt for what comes
// from it. Both work in place, without allocating. The shared secret is
// kept for a live upgrade (HandOver), and never shown.
type Ciphers struct {
	Encrypt, Decrypt *mc.CFB8
	secret           handover.Key
}

// CiphersOf returns the ciphers of a verdict's shared secret, nil when it
// has none (the client's response did not check out).
func CiphersOf(r mcauth.Result) *Ciphers {
	if !r.HaveSecret {
		return nil
	}
	enc, dec, err := mc.NewConnCiphers(r.SharedSecret[:])
	if err != nil {
		panic(fmt.Sprintf("login: AES with a %d-byte key: %v", len(r.SharedSecret), err)) // 16 bytes always make a key
	}
	return &Ciphers{Encrypt: enc, Decrypt: dec, secret: r.SharedSecret}
}

// Seal returns b encrypted for the client; nil ciphers return b itself.
// With ciphers, b is copied first: it may be shared (a prepared frame).
func (c *Ciphers) Seal(b []byte) []byte {
	if c == nil || len(b) == 0 {
		return b
	}
	out := append([]byte(nil), b...)
	c.Encrypt.XORKeyStream(out, out)
	return out
}

// Open decrypts b, from the client, in place; nil ciphers leave it.
func (c *Ciphers) Open(b []byte) {
	if c != nil {
		c.Decrypt.XORKeyStream(b, b)
	}
}

// Inbound decrypts b in place when it came from the client; nil ciphers
// leave it. It does not allocate.
func (c *Ciphers) Inbound(b []byte, fromClient bool) {
	if c != nil && fromClient {
		c.Decrypt.XORKeyStream(b, b)
	}
}

// Outbound encrypts b in place when it goes to the client; nil ciphers
// leave it. It does not allocate.
func (c *Ciphers) Outbound(b []byte, toClient bool) {
	if c != nil && toClient {
		c.Encrypt.XORKeyStream(b, b)
	}
}

// Authenticated makes the backend login carry the profile the session
// server gave: its UUID, name and properties (skin textures), in both
// forwardings and in the client's Login Success.
func (b *Backend) Authenticated(p mcauth.Profile) {
	b.uuid, b.name = p.UUID, []byte(p.Name)
	b.props = b.props[:0]
	for _, pr := range p.Properties {
		b.props = append(b.props, mc.Property{Name: []byte(pr.Name), Value: []byte(pr.Value), Signed: pr.Signature != "", Signature: []byte(pr.Signature)})
	}
	if len(p.Properties) > 0 {
		b.propsJSON, _ = json.Marshal(p.Properties) // strings always marshal
	}
}

// Identity returns the player's UUID and, when the session server gave
// properties, their JSON as BungeeCord forwarding carries it.
func (b *Backend) Identity() (uuid [16]byte, propertiesJSON []byte) { return b.uuid, b.propsJSON }

// FailureReason is the counted reason of an online login that failed with
// err: an *mcauth.Failure, or a malformed Encryption Response.
func FailureReason(err error) reasons.Reason {
	var f *mcauth.Failure
	if !errors.As(err, &f) {
		return reasons.AuthBadResponse
	}
	switch f.Reason {
	case mcauth.ReasonBadToken, mcauth.ReasonBadSecret:
		return reasons.AuthBadResponse
	case mcauth.ReasonRefused:
		return reasons.AuthRefused
	}
	return reasons.AuthUnavailable
}

// AuthDisconnect returns the login Disconnect frame, with vanilla's text,
// of an online login that failed with err (see FailureReason).
func AuthDisconnect(err error) []byte {
	var f *mcauth.Failure
	if !errors.As(err, &f) {
		return mc.AppendLoginDisconnect(nil, []byte(`{"text":"`+mcauth.TextProtocolError+`"}`))
	}
	return mc.AppendLoginDisconnect(nil, f.AppendDisconnectJSON(nil))
}

// CipherTable holds the ciphers of a loop's encrypted sessions, by key;
// its zero value is empty and ready.
type CipherTable[K comparable] = keyed.Map[K, *Ciphers]
