// Package logsetup builds the zerolog logger of a tidegate process: JSON or
// console lines, colour only on a terminal, and durations written with their
// unit. Every tidegate binary builds its logger here, so that all of them
// write the same field the same way.
package logsetup

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

func init() {
	// zerolog writes a Dur field as a bare number of milliseconds by default
	// ("login_timeout":10000), which a reader can take for seconds or bytes.
	// The string form ("10s") carries its unit on a console and in JSON, and
	// parses back with time.ParseDuration. It is a package variable of
	// zerolog, so it is set once here, before any goroutine logs, for every
	// logger of the process that imports this package.
	zerolog.DurationFieldFormat = zerolog.DurationFormatString
	zerolog.DurationFieldInteger = false
}

// The output formats New accepts.
const (
	// FormatConsole is one human-readable line per event, coloured on a terminal.
	FormatConsole = "console"
	// FormatJSON is one JSON object per line.
	FormatJSON = "json"
)

// ParseLevel parses a level name: debug, info, warn or error.
func ParseLevel(name string) (zerolog.Level, error) {
	switch lvl, err := zerolog.ParseLevel(name); {
	case err == nil && lvl >= zerolog.DebugLevel && lvl <= zerolog.ErrorLevel:
		return lvl, nil
	default:
		return zerolog.NoLevel, fmt.Errorf("%q is not a level: want debug, info, warn or error", name)
	}
}

// New returns a logger that writes events of level and above to w in
// format (FormatConsole or FormatJSON), each with a timestamp.
func New(w io.Writer, level zerolog.Level, format string) (zerolog.Logger, error) {
	var l zerolog.Logger
	switch format {
	case FormatJSON:
		l = zerolog.New(w)
	case FormatConsole:
		l = zerolog.New(zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !Colour(w)})
	default:
		return zerolog.Nop(), fmt.Errorf("%q is not a format: want %s or %s", format, FormatConsole, FormatJSON)
	}
	return l.Level(level).With().Timestamp().Logger(), nil
}

// Colour reports whether console output to w should carry ANSI colour
// codes: only when w is a terminal, so that files, pipes and the journal
// get plain text, and not when NO_COLOR is set (no-color.org).
func Colour(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(interface{ Fd() uintptr })
	return ok && isatty.IsTerminal(f.Fd())
}
