// Package logflags is the --log-level and --log-format pair of flags and the
// zerolog logger they ask for, for the commands of both binaries (tidegate
// and tidegate-bench). The logger itself is internal/logsetup's.
package logflags

import (
	"fmt"
	"io"
	"os"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logsetup"
)

// Flags returns the logging flags every command takes: a new slice each
// time, so that a command can append its own to it. An app that defines
// them too lets them be given before the command's name as well.
func Flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", Value: logsetup.FormatConsole,
			Usage: "console (human; coloured only on a terminal) or json"},
	}
}

// lookup returns the value of a flag that both the app and the command
// define: given after the command's name (the command's own) wins over
// given before it (the app's), which wins over the default. urfave/cli
// would otherwise read the command's flag alone, default included.
func lookup(c *cli.Context, name string) string {
	for _, cc := range c.Lineage() {
		if cc.IsSet(name) {
			return cc.String(name)
		}
	}
	return c.String(name)
}

// New builds the logger the command's flags ask for. It writes to the app's
// ErrWriter, or standard error when the app sets none, so that a command's
// output on standard output stays clean.
func New(c *cli.Context) (zerolog.Logger, error) {
	var out io.Writer = os.Stderr
	if c.App != nil && c.App.ErrWriter != nil {
		out = c.App.ErrWriter
	}
	lvl, err := logsetup.ParseLevel(lookup(c, "log-level"))
	if err != nil {
		return zerolog.Nop(), fmt.Errorf("--log-level: %w", err)
	}
	l, err := logsetup.New(out, lvl, lookup(c, "log-format"))
	if err != nil {
		return zerolog.Nop(), fmt.Errorf("--log-format: %w", err)
	}
	return l, nil
}
