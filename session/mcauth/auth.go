package mcauth

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor/workerpool"
)

// DefaultSessionServer is Mojang's session server, the default base URL.
const DefaultSessionServer = "https://sessionserver.mojang.com"

// KeyBits is the size of the RSA key, vanilla's.
const KeyBits = 1024

// VerifyTokenLen is the length of a verify token, vanilla's.
const VerifyTokenLen = 4

// Defaults of Config's zero fields.
const (
	DefaultTimeout = 5 * time.Second
	DefaultWorkers = 32
	DefaultQueue   = 1024
	workerIdle     = 10 * time.Second
)

// Config configures an Authenticator.
type Config struct {
	// SessionServer is the session server's base URL (http or https, a
	// trailing slash dropped); "" is DefaultSessionServer.
	SessionServer string
	// PassClientIP adds the client's address to hasJoined (ip=), so that
	// the session server refuses a login whose join came from another
	// address (Velocity's prevent-client-proxy-connections).
	PassClientIP bool
	// Timeout bounds a login's wait for its verdict from Authenticate,
	// queueing included; 0 is DefaultTimeout.
	Timeout time.Duration
	// Workers is how many logins are worked on at once, Queue how many
	// more may wait; 0 is DefaultWorkers, DefaultQueue.
	Workers, Queue int
	// Client makes the hasJoined calls; nil is a client of its own, with
	// keep-alive connections for every worker.
	Client *http.Client
}

// Authenticator carries out online-mode logins: it holds the server's key
// pair, made by New, and makes the session server calls on its pool.
type Authenticator struct {
	cfg       Config
	key       *rsa.PrivateKey
	publicDER []byte
	client    *http.Client
	pool      *workerpool.Pool[job]
	ctx       context.Context // canceled by Close: calls under way stop
	cancel    context.CancelFunc
	counts    [numReasons]atomic.Uint64
	accepted  atomic.Uint64
}

// New makes the key pair and returns an Authenticator.
func New(cfg Config) (*Authenticator, error) {
	if cfg.SessionServer == "" {
		cfg.SessionServer = DefaultSessionServer
	}
	cfg.SessionServer = strings.TrimSuffix(cfg.SessionServer, "/")
	if u, err := url.Parse(cfg.SessionServer); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("mcauth: session server %q is not an http(s) base URL", cfg.SessionServer)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	key, err := rsa.GenerateKey(rand.Reader, KeyBits)
	if err != nil {
		return nil, fmt.Errorf("mcauth: RSA-%d key: %w", KeyBits, err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("mcauth: encoding the public key: %w", err)
	}
	client := cfg.Client
	if client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = cfg.Workers
		client = &http.Client{Transport: t}
	}
	a := &Authenticator{cfg: cfg, key: key, publicDER: der, client: client,
		pool: workerpool.New[job]("mcauth: session server", cfg.Workers, cfg.Queue, workerIdle)}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	return a, nil
}

// Close stops the workers, ending calls under way, and waits for them until
// ctx ends. Logins queued or under way then get no verdict.
func (a *Authenticator) Close(ctx context.Context) error {
	a.cancel()
	err := a.pool.Close(ctx)
	if a.cfg.Client == nil {
		a.client.CloseIdleConnections() // ours: nobody else will
	}
	return err
}

// PublicKey returns the server's public key, DER X.509, as the Encryption
// Request carries it. The caller must not modify it.
func (a *Authenticator) PublicKey() []byte { return a.publicDER }

// Challenge is one login's verify token, made fresh for each login.
type Challenge struct {
	token [VerifyTokenLen]byte
}

// NewChallenge returns a fresh random verify token.
func NewChallenge() Challenge {
	var c Challenge
	_, _ = rand.Read(c.token[:]) // never fails (crypto/rand)
	return c
}

// AppendEncryptionRequest appends the whole Encryption Request frame of a
// login with challenge c, for protocol version v, to dst and returns the
// extended slice.
func (a *Authenticator) AppendEncryptionRequest(dst []byte, v int32, c *Challenge) []byte {
	return mc.AppendEncryptionRequest(dst, v, mc.EncryptionRequest{
		ServerID: nil, PublicKey: a.publicDER, VerifyToken: c.token[:], ShouldAuthenticate: true,
	})
}

// Verify decrypts an Encryption Response with the private key and checks
// it against the login's challenge: the verify token must be the one sent,
// or, for a 1.19 to 1.19.2 client that signed it, the signature must check
// out under playerKey (the DER RSA key of its Login Start); the shared
// secret must be 16 bytes. It takes two RSA decryptions (see the package
// doc for where it runs).
func (a *Authenticator) Verify(c *Challenge, resp mc.EncryptionResponse, playerKey []byte) (secret [16]byte, f *Failure) {
	if resp.Signed {
		if f := verifySignature(c, resp, playerKey); f != nil {
			return secret, f
		}
	} else {
		// PKCS #1 v1.5 (deprecated in Go) is what the protocol mandates; vanilla answers the same oracle.
		token, err := rsa.DecryptPKCS1v15(nil, a.key, resp.VerifyToken)
		if err != nil {
			return secret, newFailure(ReasonBadToken, fmt.Errorf("decrypting the verify token (%d bytes): %w", len(resp.VerifyToken), err))
		}
		if subtle.ConstantTimeCompare(token, c.token[:]) != 1 {
			return secret, newFailure(ReasonBadToken, fmt.Errorf("verify token %x, want the %d bytes sent", token, VerifyTokenLen))
		}
	}
	// The protocol mandates PKCS #1 v1.5.
	s, err := rsa.DecryptPKCS1v15(nil, a.key, resp.SharedSecret)
	if err != nil {
		return secret, newFailure(ReasonBadSecret, fmt.Errorf("decrypting the shared secret (%d bytes): %w", len(resp.SharedSecret), err))
	}
	if len(s) != len(secret) {
		return secret, newFailure(ReasonBadSecret, fmt.Errorf("shared secret of %d bytes, want %d", len(s), len(secret)))
	}
	copy(secret[:], s)
	return secret, nil
}

// verifySignature checks a 1.19 to 1.19.2 response that signed the verify
// token: SHA256withRSA over the token and the salt (a big-endian long).
func verifySignature(c *Challenge, resp mc.EncryptionResponse, playerKey []byte) *Failure {
	if len(playerKey) == 0 {
		return newFailure(ReasonBadToken, errors.New("a signed verify token without a player key in Login Start"))
	}
	k, err := x509.ParsePKIXPublicKey(playerKey)
	if err != nil {
		return newFailure(ReasonBadToken, fmt.Errorf("player key of Login Start: %w", err))
	}
	pub, ok := k.(*rsa.PublicKey)
	if !ok {
		return newFailure(ReasonBadToken, fmt.Errorf("player key of Login Start is a %T, want RSA", k))
	}
	h := sha256.New()
	h.Write(c.token[:])
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(resp.Salt)))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, h.Sum(nil), resp.Signature); err != nil {
		return newFailure(ReasonBadToken, fmt.Errorf("signature of the verify token: %w", err))
	}
	return nil
}

// Login is what Authenticate needs of one login.
type Login struct {
	// Username is the name of Login Start.
	Username string
	// ClientIP is the client's address, passed to the session server when
	// Config.PassClientIP is set.
	ClientIP netip.Addr
	// Challenge is the one the Encryption Request carried.
	Challenge Challenge
	// Response is the client's Encryption Response; Authenticate copies
	// it, so it may alias a read buffer.
	Response mc.EncryptionResponse
	// PlayerKey is the DER RSA key of a 1.19 to 1.19.2 Login Start, nil
	// otherwise; Authenticate copies it.
	PlayerKey []byte
}

// Result is the verdict on a login.
type Result struct {
	// Failure is nil when the login is authenticated.
	Failure *Failure
	// HaveSecret tells that SharedSecret is the client's: the response
	// checked out (a failure after it is the session server's). The client
	// then encrypts from its next byte on, and so must the proxy, the
	// disconnect of a failure included (vanilla does the same).
	HaveSecret   bool
	SharedSecret [16]byte
	// ServerHash is the serverId sent to hasJoined.
	ServerHash string
	// Profile is the authenticated player.
	Profile Profile
}

// Authenticate checks l's Encryption Response and asks the session server
// about the login, on the pool: done is called once, from a worker
// goroutine, within Config.Timeout (plus the last call's return), and the
// caller hands the Result to its loop. When the pool cannot take the login
// (queue full, or closed) Authenticate returns the failure at once and done
// is never called.
func (a *Authenticator) Authenticate(l Login, done func(Result)) *Failure {
	if a.ctx.Err() != nil {
		return a.count(newFailure(ReasonPoolFull, errors.New("the authenticator is closed")))
	}
	l.Response = copyResponse(l.Response)
	l.PlayerKey = append([]byte(nil), l.PlayerKey...)
	j := job{a: a, l: l, deadline: time.Now().Add(a.cfg.Timeout), done: done}
	if !a.pool.Submit(j) {
		return a.count(newFailure(ReasonPoolFull, fmt.Errorf("%d logins already wait for the session server", a.cfg.Queue)))
	}
	return nil
}

func copyResponse(r mc.EncryptionResponse) mc.EncryptionResponse {
	buf := make([]byte, 0, len(r.SharedSecret)+len(r.VerifyToken)+len(r.Signature))
	take := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		buf = append(buf, b...)
		return buf[len(buf)-len(b) : len(buf) : len(buf)]
	}
	r.SharedSecret, r.VerifyToken, r.Signature = take(r.SharedSecret), take(r.VerifyToken), take(r.Signature)
	return r
}

// job is one login on the pool.
type job struct {
	a        *Authenticator
	l        Login
	deadline time.Time
	done     func(Result)
}

// Run verifies the response and calls hasJoined.
func (j job) Run(<-chan struct{}) {
	a := j.a
	var r Result
	r.Failure = j.run(&r)
	if r.Failure != nil {
		a.count(r.Failure)
	} else {
		a.accepted.Add(1)
	}
	j.done(r)
}

func (j job) run(r *Result) *Failure {
	a := j.a
	if wait := time.Until(j.deadline); wait <= 0 {
		return newFailure(ReasonSlow, fmt.Errorf("waited %v for a worker", a.cfg.Timeout-wait))
	}
	secret, f := a.Verify(&j.l.Challenge, j.l.Response, j.l.PlayerKey)
	if f != nil {
		return f
	}
	r.HaveSecret, r.SharedSecret = true, secret
	r.ServerHash = string(mc.AppendServerHash(make([]byte, 0, 41), nil, secret[:], a.publicDER))
	ctx, cancel := context.WithDeadline(a.ctx, j.deadline)
	defer cancel()
	var ip netip.Addr
	if a.cfg.PassClientIP {
		ip = j.l.ClientIP
	}
	r.Profile, f = a.HasJoined(ctx, j.l.Username, r.ServerHash, ip)
	return f
}

// Accepted returns how many logins Authenticate authenticated.
func (a *Authenticator) Accepted() uint64 { return a.accepted.Load() }

// Failures returns how many logins failed for reason (one of Reasons).
func (a *Authenticator) Failures(reason string) uint64 {
	for i, r := range Reasons {
		if r == reason {
			return a.counts[i].Load()
		}
	}
	return 0
}

func (a *Authenticator) count(f *Failure) *Failure {
	a.counts[f.reason].Add(1)
	return f
}
