package probe

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/protocol/proxyproto"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// Target is a backend as an active probe checks it.
type Target struct {
	Group, Addr string
	Kind        config.ProbeKind    // config.ProbeTCP or config.ProbeStatus
	PP          proxyproto.Versions // the PROXY header its sessions get; 0 for none
}

// Once runs one active probe of t, whose health is h, under cfg and
// records its result, logging to log; now is the clock of the health state
// and lease how long a probe may stay unanswered. When t's cooldown has
// ended it is the probe that decides whether t is back.
func Once(ctx context.Context, h *Health, t Target, cfg config.ProbeConfig, now func() int64, lease int64, log *zerolog.Logger) {
	_, decides := h.Available(now(), lease)
	d, err := Check(ctx, t.Addr, t.Kind, cfg.Timeout, t.PP)
	at := now()
	if ctx.Err() != nil { // stopping: says nothing about the backend
		if decides {
			h.DropProbe(at)
		}
		return
	}
	l := log.With().Str("group", t.Group).Str("backend", t.Addr).Str("check", string(t.Kind)).Logger()
	if err != nil {
		if h.CheckFailed(cfg, at, err, decides) {
			l.Warn().Err(err).Int32("failures", h.Failures.Load()).Dur("cooldown", cfg.Cooldown).Msg("backend marked down")
		} else {
			l.Debug().Err(err).Msg("backend check failed")
		}
		return
	}
	h.CheckPassed(d)
	if h.MarkUp() {
		l.Info().Dur("latency", d).Msg("backend up")
	}
}
