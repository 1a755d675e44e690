package proxy

import (
	"net/http"

	"github.com/tidegate/tidegate/session/proxy/admin"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// AdminHandler returns the handler of the admin API and the status page
// (see package admin): GET /api/v1/backends, /api/v1/sessions,
// /api/v1/rejections, /api/v1/config (JSON) and / (HTML). It answers only
// while admin.enabled is set (404 otherwise), read from the running
// configuration on each request; who may ask is the policy of the metrics
// address that serves it (internal/adminaccess).
func (p *Proxy) AdminHandler() http.Handler {
	return admin.Handler(adminSource{p}, admin.Options{
		Reasons: reasons.Labels(), KeptPerLoop: admin.RecentPerLoop, Loops: len(p.loops), Network: p.cluster,
	})
}

// adminSource is the proxy as the admin API reads it.
type adminSource struct{ *Proxy }

// Running returns the configuration new sessions start under and its hash,
// of the same generation.
func (s adminSource) Running() (*config.Config, string) {
	g := s.cur()
	return g.cfg, g.hash
}

// Rejected counts every refusal since the proxy started, by reason.
func (s adminSource) Rejected() map[string]int64 { return s.Stats().Rejected }
