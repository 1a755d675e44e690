package harness

import (
	"github.com/panjf2000/gnet/v2/pkg/logging"
	"github.com/rs/zerolog"
)

// GnetLogger routes the printf-style logs of a load client's gnet engine
// into l: its info lines go to debug (they describe the client's own
// start-up), and Fatalf logs at error level without ending the process.
// zerolog.Nop() silences gnet.
func GnetLogger(l zerolog.Logger) logging.Logger { return gnetLogger{l} }

type gnetLogger struct{ log zerolog.Logger }

func (g gnetLogger) Debugf(format string, args ...any) { g.log.Debug().Msgf(format, args...) }
func (g gnetLogger) Infof(format string, args ...any)  { g.log.Debug().Msgf(format, args...) }
func (g gnetLogger) Warnf(format string, args ...any)  { g.log.Warn().Msgf(format, args...) }
func (g gnetLogger) Errorf(format string, args ...any) { g.log.Error().Msgf(format, args...) }
func (g gnetLogger) Fatalf(format string, args ...any) { g.log.Error().Msgf(format, args...) }
