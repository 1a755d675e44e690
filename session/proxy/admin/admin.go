// Package admin is the proxy's admin API and status page, which the proxy
// command serves on the metrics address (cmd/tidegate mounts the proxy's
// AdminHandler at /api/ and /). Every answer is read from the running
// proxy through Source: backends from their atomic health words, sessions
// and refusals from the event loops, the configuration from the one new
// sessions start under.
package admin

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidegate/tidegate/session/proxy/config"
)

// adminTimeout bounds how long a request waits for the event loops.
const adminTimeout = 2 * time.Second

// The default ?limit= of /api/v1/rejections and /api/v1/sessions, and how
// many refusals the status page shows.
const (
	defaultRejections = 50
	pageRejections    = 20
	defaultSessions   = 100
)

// Source is the running proxy, as the admin API reads it. Each method may
// be called from any goroutine.
type Source interface {
	// Running returns the configuration new sessions start under and its
	// hash.
	Running() (cfg *config.Config, hash string)
	// BackendHealth returns the health of every backend, ordered by group
	// name and then as configured.
	BackendHealth() []BackendStatus
	// GroupsDown returns, sorted, the groups some listener sends sessions
	// to that have no backend up.
	GroupsDown() []string
	// Sessions counts and lists the open sessions that pass f, waiting for
	// the event loops until ctx ends.
	Sessions(ctx context.Context, f SessionFilter) SessionsSummary
	// RecentRejections returns, newest first, at most limit of the last
	// refusals, and how many loops did not answer before ctx ended.
	RecentRejections(ctx context.Context, limit int) ([]Rejection, int)
	// Rejected counts every refusal since the proxy started, by reason.
	Rejected() map[string]int64
}

// Options are what the admin API knows of the proxy that does not change
// while it runs.
type Options struct {
	// Reasons are the labels a refusal's reason may have.
	Reasons []string
	// KeptPerLoop is how many refusals each event loop remembers, and
	// Loops how many loops there are.
	KeptPerLoop, Loops int
	// Network lists the network's sessions (GET /api/v1/network/sessions);
	// nil, or a nil *cluster.Client, answers that cluster.redis is off.
	Network NetworkLister
}

// adminEndpoints are the paths Handler answers, with what each takes.
var adminEndpoints = map[string][]string{
	"/api/v1/backends":         {"group"},
	"/api/v1/sessions":         {"host", "user", "group", "backend", "limit"},
	"/api/v1/network/sessions": {"host", "user", "group", "proxy", "limit"},
	"/api/v1/rejections":       {"reason", "limit"},
	"/api/v1/config":           {},
	"/api/v1/sends":            {},
	"/":                        {},
}

// handler answers the admin API and the status page from src.
type handler struct {
	src   Source
	opt   Options
	sends sendOps
}

// Handler returns the handler of the admin API and the status page:
// GET /api/v1/backends, /api/v1/sessions, /api/v1/network/sessions
// (network.go: every proxy's, from Redis), /api/v1/rejections,
// /api/v1/sends (send.go, sendop.go: the writes POST /api/v1/send and
// /api/v1/sessions/{id}/send start them),
// /api/v1/config (JSON) and / (HTML). It answers only while admin.enabled
// is set (404 otherwise), read from the running configuration on each
// request. Who may ask (admin.allow_remote, admin.allowed_hosts) is the
// metrics address's policy (internal/adminaccess), which wraps it there.
func Handler(src Source, opt Options) http.Handler {
	h := &handler{src: src, opt: opt}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/backends", h.serveBackends)
	mux.HandleFunc("GET /api/v1/sessions", h.serveSessions)
	mux.HandleFunc("GET /api/v1/network/sessions", h.serveNetworkSessions) // network.go
	mux.HandleFunc("GET /api/v1/rejections", h.serveRejections)
	mux.HandleFunc("GET /api/v1/config", h.serveConfig)
	mux.HandleFunc("GET /{$}", h.serveStatusPage)
	mux.HandleFunc("POST /api/v1/sessions/{id}/send", h.serveSendOne) // writes (send.go)
	mux.HandleFunc("POST /api/v1/send", h.serveSendAll)
	mux.HandleFunc("GET /api/v1/sends", h.serveSends) // sendop.go
	mux.HandleFunc("GET /api/v1/sends/{id}", h.serveSend)
	mux.HandleFunc("/", serveNoEndpoint)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if running, _ := src.Running(); !running.Admin.Enabled {
			writeError(w, http.StatusNotFound, "the admin API and status page are off: admin.enabled is false in the proxy's configuration")
			return
		}
		mux.ServeHTTP(w, r)
	})
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

func (h *handler) serveBackends(w http.ResponseWriter, r *http.Request) {
	q, err := query(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	cfg, hash := h.src.Running()
	v := BackendsView{ConfigHash: hash, GroupsDown: h.src.GroupsDown(), Backends: []BackendStatus{}}
	g := q.Get("group")
	if _, ok := cfg.Groups[g]; g != "" && !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no group %q; the groups are %s", g, config.JoinWords(slices.Sorted(maps.Keys(cfg.Groups)))))
		return
	}
	for _, b := range h.src.BackendHealth() {
		if g == "" || b.Group == g {
			v.Backends = append(v.Backends, b)
		}
	}
	writeJSON(w, http.StatusOK, v)
}

// listQuery reads the query and ?limit= of a session listing; when they
// are wrong it answers 400 itself and ok is false.
func listQuery(w http.ResponseWriter, r *http.Request) (q url.Values, limit int, ok bool) {
	q, err := query(r)
	if err == nil {
		limit, err = limitParam(q, defaultSessions, MaxSessionsListed)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, 0, false
	}
	return q, limit, true
}

func (h *handler) serveSessions(w http.ResponseWriter, r *http.Request) {
	q, limit, ok := listQuery(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	writeJSON(w, http.StatusOK, h.src.Sessions(ctx, SessionFilter{
		Host: q.Get("host"), User: q.Get("user"), Group: q.Get("group"), Backend: q.Get("backend"), Limit: limit,
	}))
}

func (h *handler) serveRejections(w http.ResponseWriter, r *http.Request) {
	q, err := query(r)
	var limit int
	if err == nil {
		limit, err = limitParam(q, defaultRejections, h.opt.KeptPerLoop*max(h.opt.Loops, 1))
	}
	reason := q.Get("reason")
	if err == nil && reason != "" && !slices.Contains(h.opt.Reasons, reason) {
		err = fmt.Errorf("reason %q: want one of %s", reason, strings.Join(h.opt.Reasons, ", "))
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	all, missing := h.src.RecentRejections(ctx, h.opt.KeptPerLoop*h.opt.Loops)
	v := RejectionsView{Totals: h.src.Rejected(), Recent: []Rejection{}, KeptPerLoop: h.opt.KeptPerLoop, LoopsUnanswered: missing}
	for _, rj := range all {
		if len(v.Recent) < limit && (reason == "" || rj.Reason == reason) {
			v.Recent = append(v.Recent, rj)
		}
	}
	writeJSON(w, http.StatusOK, v)
}

func (h *handler) serveConfig(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	cfg, hash := h.src.Running()
	v, err := cfg.View()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, ConfigResponse{ConfigHash: hash, View: v})
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
	// Network is the network's players by proxy and server (nil without
	// cluster.redis).
	Network *NetworkSummary
}

type reasonTotal struct {
	Reason string
	N      int64
}

func (h *handler) serveStatusPage(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	_, hash := h.src.Running()
	page := statusPage{ConfigHash: hash, Now: time.Now(), Backends: h.src.BackendHealth(), GroupsDown: h.src.GroupsDown(),
		Sessions: h.src.Sessions(ctx, SessionFilter{}), Network: h.networkSummary(ctx)}
	var missing int
	page.Rejections, missing = h.src.RecentRejections(ctx, pageRejections)
	page.Unanswered = max(page.Sessions.LoopsUnanswered, missing)
	for reason, n := range h.src.Rejected() {
		page.Totals = append(page.Totals, reasonTotal{reason, n})
	}
	slices.SortFunc(page.Totals, func(a, b reasonTotal) int { return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Reason, b.Reason)) })
	var b strings.Builder
	if err := statusPageTemplate.Execute(&b, page); err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("rendering the status page: %v", err))
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	// No scripts, no external resources, no framing: the page is its own
	// inline style and text.
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'")
	_, _ = w.Write([]byte(b.String()))
}
