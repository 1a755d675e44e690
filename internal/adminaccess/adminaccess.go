// Package adminaccess is the one access policy of the metrics address (the
// HTTP listener of internal/lifecycle), for every route it serves. Routes
// come in four classes:
//
//   - public: /metrics, and /healthz and /readyz with their checks' names
//     and results only, which scrapers and probes read from anywhere;
//   - read: the proxy's admin API and status page, and the checks' details
//     of /healthz and /readyz;
//   - profile: /debug/pprof/, a read that is off unless enabled and whose
//     ?seconds= is bounded;
//   - write: what changes the process (POST /-/reload), a read that also
//     needs the configured token and is refused when it looks cross-site.
//
// A read, unless remote access is allowed, must come over loopback (from
// a loopback address to a loopback address) and name in its Host header a
// loopback address, localhost, or one of the allowed hosts: a browser page
// whose name an attacker points at 127.0.0.1 (DNS rebinding) sends its own
// name there.
package adminaccess

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// MaxProfileSeconds bounds ?seconds= of a profile: a longer CPU profile or
// delta profile holds a connection of the metrics address that long.
const MaxProfileSeconds = 60

// Rules are what the policy allows; Policy.Set replaces them at once (the
// proxy's on each reload).
type Rules struct {
	// AllowRemote answers reads and writes that do not come over loopback,
	// and leaves the Host header unchecked.
	AllowRemote bool
	// AllowedHosts are the names, beside localhost and loopback addresses,
	// that a Host header may give when AllowRemote is off (compared without
	// the port and case).
	AllowedHosts []string
	// Token is what a write must send as "Authorization: Bearer TOKEN";
	// empty refuses every write.
	Token Token
	// Profiles serves /debug/pprof/.
	Profiles bool
}

// Token is the secret a write sends. It prints as REDACTED (as "" when
// empty) under fmt's verbs, so that Rules can be logged.
type Token string

// String returns REDACTED, or "" when the token is empty.
func (t Token) String() string {
	if t == "" {
		return ""
	}
	return "REDACTED"
}

// GoString returns the String form quoted, so that %#v redacts as well.
func (t Token) GoString() string { return strconv.Quote(t.String()) }

// Knobs say, in the refusals' messages, how an operator changes each rule
// of the command the policy serves; an empty knob is one the command does
// not have.
type Knobs struct {
	// AllowRemote, e.g. "set admin.allow_remote: true in the proxy's
	// configuration".
	AllowRemote string
	// AllowedHosts, e.g. "list it in admin.allowed_hosts".
	AllowedHosts string
	// Token, e.g. "set admin.token_file in the proxy's configuration to a
	// file holding a token".
	Token string
	// Profiles, e.g. "start the command with --pprof".
	Profiles string
}

// Policy applies Rules to the requests of the metrics address. Its methods
// may be called from any goroutine.
type Policy struct {
	rules atomic.Pointer[Rules]
	knobs Knobs
}

// New returns a policy with rules r whose refusals name knobs k.
func New(r Rules, k Knobs) *Policy {
	p := &Policy{knobs: k}
	p.Set(r)
	return p
}

// Set replaces the rules, for the requests that come after.
func (p *Policy) Set(r Rules) {
	r.AllowedHosts = slices.Clone(r.AllowedHosts)
	p.rules.Store(&r)
}

// Rules returns the rules in force.
func (p *Policy) Rules() Rules { return *p.rules.Load() }

// Refusal is why a request is not answered, with its status code.
type Refusal struct {
	Code int
	Why  string
}

// Write answers the refusal as JSON {"error": why}, as the admin API
// answers its own errors.
func (f *Refusal) Write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if f.Code == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="tidegate"`)
	}
	w.WriteHeader(f.Code)
	_ = json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
	}{f.Why})
}

// CheckRead returns nil when r may read, or why not.
func (p *Policy) CheckRead(r *http.Request) *Refusal {
	rules := p.rules.Load()
	if rules.AllowRemote {
		return nil
	}
	var local net.Addr
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		local = a
	}
	if !overLoopback(local, r.RemoteAddr) {
		to := "an unknown address"
		if local != nil {
			to = local.String()
		}
		return &Refusal{http.StatusForbidden, fmt.Sprintf("this address answers %s only over loopback, and this request came from %s to %s%s",
			r.URL.Path, r.RemoteAddr, to, p.howTo(p.knobs.AllowRemote, " (then whoever reaches this address can read the sessions and the configuration)"))}
	}
	if !hostAllowed(r.Host, rules.AllowedHosts) {
		return &Refusal{http.StatusForbidden, fmt.Sprintf("the Host header %q is not localhost or a loopback address: a web page whose name "+
			"was pointed at this machine (DNS rebinding) sends its own name there, so %s is answered only to one of those%s",
			r.Host, r.URL.Path, p.howTo(p.knobs.AllowedHosts, ""))}
	}
	return nil
}

// howTo is the clause of a refusal that says how to allow it, "" when the
// command has no such knob.
func (p *Policy) howTo(knob, then string) string {
	if knob == "" {
		return ""
	}
	return "; " + knob + " to answer it" + then
}

// overLoopback reports whether a request to local (the address it
// arrived on) from remote (its RemoteAddr, ip:port) came over loopback:
// both addresses loopback (127.0.0.0/8, ::1, and IPv4 as IPv6
// ::ffff:127.0.0.1). An address it cannot read counts as remote.
func overLoopback(local net.Addr, remote string) bool {
	from, err := netip.ParseAddrPort(remote)
	to := netip.AddrPort{}
	if t, ok := local.(*net.TCPAddr); ok {
		to = t.AddrPort()
	}
	return err == nil && from.Addr().Unmap().IsLoopback() && to.Addr().Unmap().IsLoopback()
}

// hostAllowed reports whether the Host header hostport names localhost
// (or a name under .localhost, which browsers resolve to loopback
// themselves), a loopback address, or one of allowed.
func hostAllowed(hostport string, allowed []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" {
		return false
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsLoopback() {
		return true
	}
	return slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "."), host) })
}

// Read serves h to the requests CheckRead allows.
func (p *Policy) Read(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := p.CheckRead(r); f != nil {
			f.Write(w)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Profiles serves h, the profiles, to the reads CheckRead allows while
// profiles are on (404 otherwise), with ?seconds= at most
// MaxProfileSeconds (400 otherwise).
func (p *Policy) Profiles(h http.Handler) http.Handler {
	return p.Read(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.rules.Load().Profiles {
			(&Refusal{http.StatusNotFound, "profiles are off" + p.howTo(p.knobs.Profiles, "")}).Write(w)
			return
		}
		if s := r.URL.Query().Get("seconds"); s != "" {
			if n, err := strconv.Atoi(s); err != nil || n < 1 || n > MaxProfileSeconds {
				(&Refusal{http.StatusBadRequest, fmt.Sprintf("seconds=%q: want a whole number of seconds from 1 to %d", s, MaxProfileSeconds)}).Write(w)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
}

// Write serves h to the reads CheckRead allows that carry the token and do
// not look cross-site. what names the write in refusals ("reloading the
// configuration") and without says what does it without a token ("SIGHUP
// still reloads it"; may be empty).
func (p *Policy) Write(what, without string, h http.Handler) http.Handler {
	return p.Read(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := p.checkWrite(r, what, without); f != nil {
			f.Write(w)
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// checkWrite returns nil when r, a read CheckRead allows, may write, or
// why not.
func (p *Policy) checkWrite(r *http.Request, what, without string) *Refusal {
	if why := crossSite(r); why != "" {
		return &Refusal{http.StatusForbidden, fmt.Sprintf("%s is refused: %s; a cross-site page could send this request from a browser on this machine", what, why)}
	}
	token := p.rules.Load().Token
	if without != "" {
		without = " (" + without + ")"
	}
	if token == "" {
		how := ""
		if p.knobs.Token != "" {
			how = ": " + p.knobs.Token + ", and send it as Authorization: Bearer TOKEN"
		}
		return &Refusal{http.StatusForbidden, fmt.Sprintf("%s over HTTP is off until a token is configured%s%s", what, how, without)}
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return &Refusal{http.StatusUnauthorized, fmt.Sprintf("%s needs the token as Authorization: Bearer TOKEN, and the request has none%s", what, without)}
	}
	// Hashes of equal length, so that the comparison's time says nothing of
	// the token's length either.
	want, have := sha256.Sum256([]byte(string(token))), sha256.Sum256([]byte(strings.TrimSpace(got)))
	if subtle.ConstantTimeCompare(want[:], have[:]) != 1 {
		return &Refusal{http.StatusUnauthorized, fmt.Sprintf("%s: the token in Authorization is not the configured one%s", what, without)}
	}
	return nil
}

// browserBodies are the content types a page can send cross-site without
// the browser asking first (a CORS "simple request"): an HTML form's, or
// fetch's with no-cors.
var browserBodies = []string{"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"}

// crossSite says why r looks like a browser's cross-site request, or ""
// when it does not: an Origin other than the Host, Sec-Fetch-Site
// cross-site or same-site, or a body a form can send.
func crossSite(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			return fmt.Sprintf("its Origin %q is not this address (Host %q)", o, r.Host)
		}
	}
	if s := strings.ToLower(r.Header.Get("Sec-Fetch-Site")); s == "cross-site" || s == "same-site" {
		return fmt.Sprintf("it is sent with Sec-Fetch-Site: %s", s)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || slices.Contains(browserBodies, strings.ToLower(mt)) {
			return fmt.Sprintf("its Content-Type %q is one an HTML form can send; send no body, or Content-Type: application/json", ct)
		}
	}
	return ""
}
