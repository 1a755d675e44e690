package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/metrics"
	"github.com/tidegate/tidegate/session/proxy"
)

// healthCheck is one named check of /healthz or /readyz. check reports
// whether it passes and a detail, encoded as JSON, that says why.
type healthCheck struct {
	name  string
	check func() (ok bool, detail any)
}

// engine is what the process watches of a server to notice that its event
// loops ended: *reactor.Server has it.
type engine interface {
	Done() <-chan struct{}
	Err() error
}

// namedEngine is an engine with the name its server is checked and
// exported under.
type namedEngine struct {
	name string
	e    engine
}

// healthRegistry is what a long-running command knows of its own health:
// its reactor servers, the extra checks its readiness needs, and whether it
// is draining. Its methods may be called from any goroutine once the
// servers are added.
type healthRegistry struct {
	live     []healthCheck // every server's liveness
	ready    []healthCheck // beyond the liveness checks and draining
	engines  []namedEngine
	servers  map[string]*reactor.Server
	draining atomic.Bool
	// reload, when set, is what POST /-/reload on the metrics address runs
	// (the same as SIGHUP).
	reload atomic.Pointer[func() error]
}

// reloadHandler serves POST /-/reload: 200 when the configuration was
// reloaded, 409 with every problem when it was refused (the running one
// stays), 404 when the command has nothing to reload.
func (h *healthRegistry) reloadHandler(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST reloads the configuration", http.StatusMethodNotAllowed)
		return
	}
	f := h.reload.Load()
	if f == nil {
		http.Error(w, "this command has no configuration to reload", http.StatusNotFound)
		return
	}
	if err := (*f)(); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	_, _ = io.WriteString(w, "reloaded\n")
}

func newHealthRegistry() *healthRegistry {
	return &healthRegistry{servers: map[string]*reactor.Server{}}
}

// addServer registers a started reactor server under name: /healthz and
// /readyz fail unless its loops run and every listener is alive, the
// process ends when its loops end, and metrics.NewCollector exports it.
func (h *healthRegistry) addServer(name string, s *reactor.Server) {
	h.live = append(h.live, healthCheck{name: name, check: func() (bool, any) {
		hs := s.Health()
		return hs.OK(), hs
	}})
	h.engines = append(h.engines, namedEngine{name: name, e: s})
	h.servers[name] = s
}

// addReadiness adds a check that /readyz needs to pass (and /healthz not).
func (h *healthRegistry) addReadiness(name string, check func() (bool, any)) {
	h.ready = append(h.ready, healthCheck{name: name, check: check})
}

// addProxy registers a started proxy: its reactor server, and a readiness
// check that fails while a group some listener sends sessions to has no
// backend up.
func (h *healthRegistry) addProxy(p *proxy.Proxy) {
	h.addServer("proxy", p.Reactor())
	h.addReadiness("backends", func() (bool, any) {
		down := p.GroupsDown()
		return len(down) == 0, backendsDetail{GroupsDown: down, Backends: p.BackendHealth()}
	})
}

// backendsDetail is the detail of the proxy's backends check.
type backendsDetail struct {
	GroupsDown []string              `json:"groups_down"`
	Backends   []proxy.BackendStatus `json:"backends"`
}

// SetDraining marks the process as draining (on) or not: while it drains,
// /readyz answers 503 so that load balancers stop sending it connections,
// and /healthz is unaffected. Graceful shutdown sets it before it stops
// the servers; runUntilSignal sets it when a signal arrives. A nil
// registry ignores it.
func (h *healthRegistry) SetDraining(on bool) {
	if h != nil {
		h.draining.Store(on)
	}
}

// Draining reports whether SetDraining(true) was called last.
func (h *healthRegistry) Draining() bool { return h != nil && h.draining.Load() }

// healthReport is the JSON body of /healthz and /readyz.
type healthReport struct {
	OK bool `json:"ok"`
	// PID tells processes apart across a live upgrade.
	PID    int           `json:"pid"`
	Checks []checkResult `json:"checks"`
}

// checkResult is one check in a healthReport.
type checkResult struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail any    `json:"detail,omitempty"`
}

// report runs the liveness checks, and for readiness also the draining
// check and the readiness checks.
func (h *healthRegistry) report(readiness bool) healthReport {
	checks := h.live
	if readiness {
		draining := healthCheck{name: "draining", check: func() (bool, any) {
			d := h.Draining()
			return !d, map[string]bool{"draining": d}
		}}
		checks = append(append(append([]healthCheck(nil), checks...), draining), h.ready...)
	}
	r := healthReport{OK: true, Checks: make([]checkResult, 0, len(checks))}
	for _, c := range checks {
		ok, detail := c.check()
		r.OK = r.OK && ok
		r.Checks = append(r.Checks, checkResult{Name: c.name, OK: ok, Detail: detail})
	}
	return r
}

// handler answers the report as JSON: 200 when every check passes, 503
// otherwise.
func (h *healthRegistry) handler(readiness bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		r := h.report(readiness)
		r.PID = os.Getpid()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !r.OK {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(r)
	}
}

// collector returns the one reactor collector of the process, for every
// registered server.
func (h *healthRegistry) collector() *metrics.Collector { return metrics.NewCollector(h.servers) }
