package proxy

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidegate/tidegate/session/proxy/config"
)

// The admin API and the status page, which the proxy command serves on the
// metrics address (cmd/tidegate mounts AdminHandler at /api/ and /). Every
// answer is read from the running state: backends from their atomic health
// words, sessions and refusals from the event loops (admin_data.go), the
// configuration from the generation new sessions start under.

// adminTimeout bounds how long a request waits for the event loops.
const adminTimeout = 2 * time.Second

// The default ?limit= of /api/v1/rejections and /api/v1/sessions, and how
// many refusals the status page shows.
const (
	defaultRejections = 50
	pageRejections    = 20
	defaultSessions   = 100
)

// adminEndpoints are the paths AdminHandler answers, with what each takes.
var adminEndpoints = map[string][]string{
	"/api/v1/backends":   {"group"},
	"/api/v1/sessions":   {"host", "user", "group", "backend", "limit"},
	"/api/v1/rejections": {"reason", "limit"},
	"/api/v1/config":     {},
	"/":                  {},
}

// AdminHandler returns the handler of the admin API and the status page:
// GET /api/v1/backends, /api/v1/sessions, /api/v1/rejections,
// /api/v1/config (JSON) and / (HTML). It answers only while admin.enabled
// is set (404 otherwise) and, unless admin.allow_remote is set, only
// requests that come over loopback (403 otherwise); both are read from the
// running configuration on each request.
func (p *Proxy) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/backends", p.serveBackends)
	mux.HandleFunc("GET /api/v1/sessions", p.serveSessions)
	mux.HandleFunc("GET /api/v1/rejections", p.serveRejections)
	mux.HandleFunc("GET /api/v1/config", p.serveConfig)
	mux.HandleFunc("GET /{$}", p.serveStatusPage)
	mux.HandleFunc("/", serveNoEndpoint)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cfg := p.cur().cfg.Admin
		if !cfg.Enabled {
			writeError(w, http.StatusNotFound, "the admin API and status page are off: admin.enabled is false in the proxy's configuration")
			return
		}
		var local net.Addr
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			local = a
		}
		if ok, why := adminAllowed(cfg, local, r.RemoteAddr); !ok {
			writeError(w, http.StatusForbidden, why)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// adminAllowed decides whether a request to local (the address it
// arrived on) from remote (its RemoteAddr, ip:port) may be answered: with
// allow_remote every request is, otherwise only one from a loopback
// address to a loopback address (127.0.0.0/8, ::1, and IPv4 as IPv6
// ::ffff:127.0.0.1). An address it cannot read counts as remote. When it
// refuses it says why and how to allow it.
func adminAllowed(cfg config.AdminConfig, local net.Addr, remote string) (bool, string) {
	if cfg.AllowRemote {
		return true, ""
	}
	from, err := netip.ParseAddrPort(remote)
	to := netip.AddrPort{}
	if t, ok := local.(*net.TCPAddr); ok {
		to = t.AddrPort()
	}
	if err == nil && from.Addr().Unmap().IsLoopback() && to.Addr().Unmap().IsLoopback() {
		return true, ""
	}
	toText := "an unknown address"
	if local != nil {
		toText = local.String()
	}
	return false, fmt.Sprintf("the admin API and status page answer only requests over loopback, and this one came from %s to %s; "+
		"set admin.allow_remote: true in the proxy's configuration to answer it (then whoever reaches this address "+
		"can read the sessions and the configuration)", remote, toText)
}

// serveNoEndpoint answers what no endpoint takes: 405 for a known path
// with another method than GET, 404 naming the endpoints otherwise.
func serveNoEndpoint(w http.ResponseWriter, r *http.Request) {
	if _, ok := adminEndpoints[r.URL.Path]; ok {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: only GET is served", r.Method, r.URL.Path))
		return
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s; the admin API has %s", r.URL.Path,
		strings.Join(slices.Sorted(maps.Keys(adminEndpoints)), ", ")))
}

// apiError is the body of every refusal and failure.
type apiError struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, apiError{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// query returns the request's query, or an error naming a parameter the
// endpoint does not take, or one given twice.
func query(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", r.URL.RawQuery, err)
	}
	allowed := adminEndpoints[r.URL.Path]
	for _, k := range slices.Sorted(maps.Keys(q)) {
		switch {
		case !slices.Contains(allowed, k) && len(allowed) == 0:
			return nil, fmt.Errorf("unknown parameter %q: %s takes none", k, r.URL.Path)
		case !slices.Contains(allowed, k):
			return nil, fmt.Errorf("unknown parameter %q: %s takes %s", k, r.URL.Path, strings.Join(allowed, ", "))
		case len(q[k]) > 1:
			return nil, fmt.Errorf("parameter %q is given %d times: give it once", k, len(q[k]))
		}
	}
	return q, nil
}

// limitParam reads ?limit=: def when it is absent, else a number from 0
// to most.
func limitParam(q url.Values, def, most int) (int, error) {
	text := q.Get("limit")
	if text == "" {
		return def, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 || n > most {
		return 0, fmt.Errorf("limit %q: want a number from 0 to %d", text, most)
	}
	return n, nil
}

// BackendsView is the body of /api/v1/backends.
type BackendsView struct {
	ConfigHash string `json:"config_hash"`
	// GroupsDown lists the groups some listener sends sessions to that
	// have no backend up (as /readyz does).
	GroupsDown []string        `json:"groups_down"`
	Backends   []BackendStatus `json:"backends"`
}

func (p *Proxy) serveBackends(w http.ResponseWriter, r *http.Request) {
	q, err := query(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	v := BackendsView{ConfigHash: p.ConfigHash(), GroupsDown: p.GroupsDown(), Backends: []BackendStatus{}}
	g := q.Get("group")
	if _, ok := p.cur().router.groups[g]; g != "" && !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no group %q; the groups are %s", g, config.JoinWords(slices.Sorted(maps.Keys(p.cur().router.groups)))))
		return
	}
	for _, b := range p.BackendHealth() {
		if g == "" || b.Group == g {
			v.Backends = append(v.Backends, b)
		}
	}
	writeJSON(w, http.StatusOK, v)
}

func (p *Proxy) serveSessions(w http.ResponseWriter, r *http.Request) {
	q, err := query(r)
	var limit int
	if err == nil {
		limit, err = limitParam(q, defaultSessions, MaxSessionsListed)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	writeJSON(w, http.StatusOK, p.Sessions(ctx, SessionFilter{
		Host: q.Get("host"), User: q.Get("user"), Group: q.Get("group"), Backend: q.Get("backend"), Limit: limit,
	}))
}

// RejectionsView is the body of /api/v1/rejections.
type RejectionsView struct {
	// Totals counts every refusal since the proxy started, by reason (as
	// tidegate_proxy_rejected_total).
	Totals map[string]int64 `json:"totals"`
	// Recent is the last refusals, newest first: each event loop keeps its
	// last KeptPerLoop.
	Recent          []Rejection `json:"recent"`
	KeptPerLoop     int         `json:"kept_per_loop"`
	LoopsUnanswered int         `json:"loops_unanswered"`
}

func (p *Proxy) serveRejections(w http.ResponseWriter, r *http.Request) {
	q, err := query(r)
	var limit int
	if err == nil {
		limit, err = limitParam(q, defaultRejections, recentPerLoop*max(len(p.loops), 1))
	}
	reason := q.Get("reason")
	if err == nil && reason != "" && !slices.Contains(reasonLabels[:], reason) {
		err = fmt.Errorf("reason %q: want one of %s", reason, strings.Join(reasonLabels[:], ", "))
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	all, missing := p.RecentRejections(ctx, recentPerLoop*len(p.loops))
	v := RejectionsView{Totals: p.Stats().Rejected, Recent: []Rejection{}, KeptPerLoop: recentPerLoop, LoopsUnanswered: missing}
	for _, rj := range all {
		if len(v.Recent) < limit && (reason == "" || rj.Reason == reason) {
			v.Recent = append(v.Recent, rj)
		}
	}
	writeJSON(w, http.StatusOK, v)
}

// ConfigResponse is the body of /api/v1/config.
type ConfigResponse struct {
	ConfigHash string `json:"config_hash"`
	config.View
}

func (p *Proxy) serveConfig(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	g := p.cur()
	v, err := g.cfg.View()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, ConfigResponse{ConfigHash: g.hash, View: v})
}

//go:embed admin.html
var statusPageHTML string

var statusPageTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"ms": func(d time.Duration) string {
		if d <= 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
	},
	"host": func(h string) string { return cmp.Or(h, "(none yet, or raw)") },
}).Parse(statusPageHTML))

// statusPage is what the status page shows.
type statusPage struct {
	ConfigHash string
	Now        time.Time
	Backends   []BackendStatus
	GroupsDown []string
	Sessions   SessionsSummary
	Rejections []Rejection
	Totals     []reasonTotal
	// Unanswered counts the loops that missed the deadline, for either
	// scan.
	Unanswered int
}

type reasonTotal struct {
	Reason string
	N      int64
}

func (p *Proxy) serveStatusPage(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	page := statusPage{ConfigHash: p.ConfigHash(), Now: time.Now(), Backends: p.BackendHealth(), GroupsDown: p.GroupsDown(),
		Sessions: p.Sessions(ctx, SessionFilter{})}
	var missing int
	page.Rejections, missing = p.RecentRejections(ctx, pageRejections)
	page.Unanswered = max(page.Sessions.LoopsUnanswered, missing)
	for reason, n := range p.Stats().Rejected {
		page.Totals = append(page.Totals, reasonTotal{reason, n})
	}
	slices.SortFunc(page.Totals, func(a, b reasonTotal) int { return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Reason, b.Reason)) })
	var b strings.Builder
	if err := statusPageTemplate.Execute(&b, page); err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("rendering the status page: %v", err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	// No scripts, no external resources, no framing: the page is its own
	// inline style and text.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'")
	_, _ = w.Write([]byte(b.String()))
}
