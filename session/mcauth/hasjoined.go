package mcauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"

	"github.com/tidegate/tidegate/protocol/mc"
)

// maxProfileBytes bounds hasJoined's answer: a profile with its textures
// property is under 2 KiB.
const maxProfileBytes = 64 << 10

// Property is one property of a profile, such as the skin "textures";
// Signature is "" when the session server sent none.
type Property struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Signature string `json:"signature,omitempty"`
}

// Profile is an authenticated player as the session server describes it.
type Profile struct {
	UUID       [16]byte
	Name       string
	Properties []Property
}

// profileJSON is hasJoined's answer on the wire.
type profileJSON struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Properties []Property `json:"properties"`
}

// HasJoined asks the session server whether username joined with
// serverHash: GET {base}/session/minecraft/hasJoined?username=&serverId=,
// with &ip= when ip is valid. 200 with a profile is yes, 204 (or an empty
// 200) is a refusal; anything else, or ctx ending, is a failure. It blocks:
// Authenticate runs it on the pool. It counts nothing.
func (a *Authenticator) HasJoined(ctx context.Context, username, serverHash string, ip netip.Addr) (Profile, *Failure) {
	q := url.Values{"username": {username}, "serverId": {serverHash}}
	if ip.IsValid() {
		q.Set("ip", ip.Unmap().String())
	}
	u := a.cfg.SessionServer + "/session/minecraft/hasJoined?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Profile{}, newFailure(ReasonError, fmt.Errorf("hasJoined request for %q: %w", a.cfg.SessionServer, err))
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return Profile{}, ctxFailure(ctx, fmt.Errorf("hasJoined at %s: %w", a.cfg.SessionServer, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProfileBytes+1))
	if err != nil {
		return Profile{}, ctxFailure(ctx, fmt.Errorf("reading hasJoined's answer from %s: %w", a.cfg.SessionServer, err))
	}
	switch {
	case resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusOK && len(body) == 0:
		return Profile{}, newFailure(ReasonRefused, fmt.Errorf("session server %s: %q has not joined", a.cfg.SessionServer, username))
	case resp.StatusCode != http.StatusOK:
		return Profile{}, newFailure(ReasonError, fmt.Errorf("session server %s answered %s", a.cfg.SessionServer, resp.Status))
	case len(body) > maxProfileBytes:
		return Profile{}, newFailure(ReasonError, fmt.Errorf("session server %s: profile longer than %d bytes", a.cfg.SessionServer, maxProfileBytes))
	}
	var pj profileJSON
	if err := json.Unmarshal(body, &pj); err != nil {
		return Profile{}, newFailure(ReasonError, fmt.Errorf("session server %s: profile: %w", a.cfg.SessionServer, err))
	}
	id, ok := mc.ParseUUID([]byte(pj.ID))
	if !ok || pj.Name == "" {
		return Profile{}, newFailure(ReasonError, fmt.Errorf("session server %s: profile with id %q and name %q", a.cfg.SessionServer, pj.ID, pj.Name))
	}
	return Profile{UUID: id, Name: pj.Name, Properties: pj.Properties}, nil
}

// ctxFailure is a failed call: a timeout when ctx's deadline passed.
func ctxFailure(ctx context.Context, err error) *Failure {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return newFailure(ReasonTimeout, err)
	}
	return newFailure(ReasonError, err)
}

// Reasons a login fails, as counted (Failures) and as Failure.Reason.
const (
	ReasonBadToken  = "bad_verify_token"  // the verify token (or its signature) is not the one sent
	ReasonBadSecret = "bad_shared_secret" // the shared secret does not decrypt to 16 bytes
	ReasonRefused   = "session_refused"   // the session server says the player has not joined
	ReasonError     = "session_error"     // the session server failed or answered nonsense
	ReasonTimeout   = "session_timeout"   // the session server did not answer in time
	ReasonSlow      = "session_slow"      // the login waited for a worker past its time: calls back up
	ReasonPoolFull  = "session_pool_full" // the pool's queue was full (or the authenticator closed)
)

// Reasons lists every reason, for metrics.
var Reasons = [...]string{ReasonBadToken, ReasonBadSecret, ReasonRefused, ReasonError, ReasonTimeout, ReasonSlow, ReasonPoolFull}

const numReasons = len(Reasons)

// Disconnect texts, a vanilla server's (en_us): a bad response is an
// exception in its packet handler; the session server's answers are
// multiplayer.disconnect.unverified_username and authservers_down.
const (
	TextProtocolError   = "Internal Exception: java.lang.IllegalStateException: Protocol error"
	TextUnverified      = "Failed to verify username!"
	TextAuthServersDown = "Authentication servers are down. Please try again later, sorry!"
)

// Failure is why a login was not authenticated.
type Failure struct {
	// Reason is a stable label for metrics and logs (one of Reasons).
	Reason string
	// Err says what failed, with what value, for the log.
	Err error

	reason int // index in Reasons
}

func newFailure(reason string, err error) *Failure {
	f := &Failure{Reason: reason, Err: err}
	for i, r := range Reasons {
		if r == reason {
			f.reason = i
		}
	}
	return f
}

// Error returns the reason and what failed.
func (f *Failure) Error() string { return "mcauth: " + f.Reason + ": " + f.Err.Error() }

// Unwrap returns what failed.
func (f *Failure) Unwrap() error { return f.Err }

// Text is the disconnect text a vanilla server gives the player.
func (f *Failure) Text() string {
	switch f.Reason {
	case ReasonBadToken, ReasonBadSecret:
		return TextProtocolError
	case ReasonRefused:
		return TextUnverified
	}
	return TextAuthServersDown
}

// AppendDisconnectJSON appends Text as a JSON text component, what
// mc.AppendLoginDisconnect carries, to dst and returns the extended slice.
func (f *Failure) AppendDisconnectJSON(dst []byte) []byte {
	b, _ := json.Marshal(f.Text()) // a string always marshals
	dst = append(dst, `{"text":`...)
	dst = append(dst, b...)
	return append(dst, '}')
}
