package lifecycle

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/tidegate/tidegate/internal/adminaccess"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/metrics"
	"github.com/tidegate/tidegate/session/proxy"
	"github.com/tidegate/tidegate/session/proxy/admin"
)

// CheckFunc is one named check of /healthz or /readyz, run on each request:
// it reads the state it checks and reports whether it passes and a detail,
// encoded as JSON, that says why.
type CheckFunc func() (ok bool, detail any)

// check is a CheckFunc with its name.
type check struct {
	name string
	run  CheckFunc
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

// Registry is the one health registry of a command: what it knows of its
// own health. Components add named checks that the registry runs when
// asked (each reactor server's liveness from its own health snapshot, the
// proxy's backend groups) and set the state the registry cannot read
// (draining). /healthz reports the liveness checks; /readyz those, whether
// the process drains, and the readiness checks. Add every check before the
// registry is served; its other methods may be called from any goroutine.
type Registry struct {
	live     []check // every server's liveness
	ready    []check // beyond the liveness checks and draining
	engines  []namedEngine
	servers  map[string]*reactor.Server
	draining atomic.Bool
	// reload, when set, is what POST /-/reload runs (the same as SIGHUP).
	reload atomic.Pointer[func() error]
}

// NewRegistry returns an empty registry: both reports pass until checks are
// added.
func NewRegistry() *Registry {
	return &Registry{servers: map[string]*reactor.Server{}}
}

// AddServer registers a started reactor server under name: /healthz and
// /readyz fail unless its loops run and every listener is alive, Run ends
// the process when its loops end, and Collector exports it.
func (h *Registry) AddServer(name string, s *reactor.Server) {
	h.live = append(h.live, check{name: name, run: func() (bool, any) {
		hs := s.Health()
		return hs.OK(), hs
	}})
	h.watch(name, s)
	h.servers[name] = s
}

// watch has Run end the process when e's loops end.
func (h *Registry) watch(name string, e engine) {
	h.engines = append(h.engines, namedEngine{name: name, e: e})
}

// AddReadiness adds a check that /readyz needs to pass (and /healthz not).
func (h *Registry) AddReadiness(name string, run CheckFunc) {
	h.ready = append(h.ready, check{name: name, run: run})
}

// AddProxy registers a started proxy: its reactor server as "proxy", and a
// readiness check, "backends", that fails while a group some listener sends
// sessions to has no backend up.
func (h *Registry) AddProxy(p *proxy.Proxy) {
	h.AddServer("proxy", p.Reactor())
	h.AddReadiness("backends", func() (bool, any) {
		down := p.GroupsDown()
		return len(down) == 0, BackendsDetail{GroupsDown: down, Backends: p.BackendHealth()}
	})
}

// BackendsDetail is the detail of the proxy's backends check.
type BackendsDetail struct {
	GroupsDown []string              `json:"groups_down"`
	Backends   []admin.BackendStatus `json:"backends"`
}

// SetDraining marks the process as draining (on) or not: while it drains,
// /readyz answers 503 so that load balancers stop sending it connections,
// and /healthz is unaffected. Run sets it when a shutdown begins. A nil
// registry ignores it.
func (h *Registry) SetDraining(on bool) {
	if h != nil {
		h.draining.Store(on)
	}
}

// Draining reports whether SetDraining(true) was called last.
func (h *Registry) Draining() bool { return h != nil && h.draining.Load() }

// SetReload sets what POST /-/reload runs: the same reload as SIGHUP.
func (h *Registry) SetReload(reload func() error) { h.reload.Store(&reload) }

// Report is the JSON body of /healthz and /readyz.
type Report struct {
	OK bool `json:"ok"`
	// PID tells processes apart across a live upgrade.
	PID    int           `json:"pid"`
	Checks []CheckResult `json:"checks"`
	// DetailsHidden, when set, says why the checks' details are left out:
	// the request may not read them (package adminaccess).
	DetailsHidden string `json:"details_hidden,omitempty"`
}

// CheckResult is one check in a Report.
type CheckResult struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail any    `json:"detail,omitempty"`
}

// Report runs the liveness checks, and for readiness also the draining
// check and the readiness checks, in the order they were added.
func (h *Registry) Report(readiness bool) Report {
	checks := h.live
	if readiness {
		draining := check{name: "draining", run: func() (bool, any) {
			d := h.Draining()
			return !d, map[string]bool{"draining": d}
		}}
		checks = append(append(append([]check(nil), checks...), draining), h.ready...)
	}
	r := Report{OK: true, PID: os.Getpid(), Checks: make([]CheckResult, 0, len(checks))}
	for _, c := range checks {
		ok, detail := c.run()
		r.OK = r.OK && ok
		r.Checks = append(r.Checks, CheckResult{Name: c.name, OK: ok, Detail: detail})
	}
	return r
}

// reportHandler answers the report as JSON: 200 when every check passes,
// 503 otherwise. The checks' details (addresses, backends, groups) go only
// to the requests policy lets read; others get each check's name and
// result, and why the details are left out.
func (h *Registry) reportHandler(readiness bool, policy *adminaccess.Policy) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		r := h.Report(readiness)
		if f := policy.CheckRead(req); f != nil {
			for i := range r.Checks {
				r.Checks[i].Detail = nil
			}
			r.DetailsHidden = f.Why
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !r.OK {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(r)
	}
}

// reloadHandler serves POST /-/reload: 200 when the configuration was
// reloaded, 409 with every problem when it was refused (the running one
// stays), 404 when the command has nothing to reload.
func (h *Registry) reloadHandler(w http.ResponseWriter, r *http.Request) {
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

// Collector returns the one reactor collector of the process, for every
// server added.
func (h *Registry) Collector() *metrics.Collector { return metrics.NewCollector(h.servers) }
