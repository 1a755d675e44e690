// Package logflags is the --log-level and --log-format pair of flags and the
// zerolog logger they ask for, for the tidegate-bench commands.
package logflags

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

// Flags returns the logging flags every command takes: a new slice each
// time, so that a command can append its own to it.
func Flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", Value: "console", Usage: "console (human) or json"},
	}
}

// New builds the logger the command's flags ask for. It writes to the app's
// ErrWriter, or standard error when the app sets none, so that a command's
// output on standard output stays clean.
func New(c *cli.Context) (zerolog.Logger, error) {
	var out io.Writer = os.Stderr
	if c.App != nil && c.App.ErrWriter != nil {
		out = c.App.ErrWriter
	}
	lvl, err := zerolog.ParseLevel(c.String("log-level"))
	if err != nil || lvl == zerolog.NoLevel {
		return zerolog.Nop(), fmt.Errorf("--log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	var l zerolog.Logger
	switch f := c.String("log-format"); f {
	case "json":
		l = zerolog.New(out)
	case "console":
		l = zerolog.New(zerolog.ConsoleWriter{Out: out, TimeFormat: time.TimeOnly})
	default:
		return zerolog.Nop(), fmt.Errorf("--log-format %q: want console or json", f)
	}
	return l.Level(lvl).With().Timestamp().Logger(), nil
}
