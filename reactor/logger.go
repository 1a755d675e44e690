package reactor

import (
	"fmt"

	"github.com/rs/zerolog"
)

// gnetLogger routes gnet's printf-style logs into zerolog.
type gnetLogger struct{ log zerolog.Logger }

func newGnetLogger(l zerolog.Logger) gnetLogger {
	return gnetLogger{log: l.With().Str("component", "gnet").Logger()}
}

func (g gnetLogger) Debugf(format string, args ...any) {
	g.log.Debug().Msg(fmt.Sprintf(format, args...))
}
func (g gnetLogger) Infof(format string, args ...any) { g.log.Info().Msg(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Warnf(format string, args ...any) { g.log.Warn().Msg(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Errorf(format string, args ...any) {
	g.log.Error().Msg(fmt.Sprintf(format, args...))
}
func (g gnetLogger) Fatalf(format string, args ...any) {
	g.log.Fatal().Msg(fmt.Sprintf(format, args...))
}
