package reactor

import (
	"strings"

	"github.com/rs/zerolog"
)

// gnetLogger routes gnet's printf-style logs into zerolog.
type gnetLogger struct{ log zerolog.Logger }

// newGnetLogger marks gnet's lines with source=gnet. Not "component": the
// server's logger may carry one already (the proxy's demo backend does), and
// zerolog appends context fields, so the line would hold that key twice.
func newGnetLogger(l zerolog.Logger) gnetLogger {
	return gnetLogger{log: l.With().Str("source", "gnet").Logger()}
}

func (g gnetLogger) Debugf(format string, args ...any) { g.log.Debug().Msgf(format, args...) }

// Infof logs gnet's info lines; its start line names the placeholder
// socket gnet is given (not a listener anyone can reach), so it goes to
// debug rather than mislead an operator.
func (g gnetLogger) Infof(format string, args ...any) {
	if strings.HasPrefix(format, "Launching gnet") {
		g.log.Debug().Msgf(format, args...)
		return
	}
	g.log.Info().Msgf(format, args...)
}
func (g gnetLogger) Warnf(format string, args ...any)  { g.log.Warn().Msgf(format, args...) }
func (g gnetLogger) Errorf(format string, args ...any) { g.log.Error().Msgf(format, args...) }

// Fatalf logs at error level and does not exit: a library must not end the
// process, and gnet only calls it on errors it also returns.
func (g gnetLogger) Fatalf(format string, args ...any) { g.log.Error().Msgf(format, args...) }
