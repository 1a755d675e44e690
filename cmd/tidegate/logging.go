package main

import (
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/logflags"
)

// logFlags are the logging flags every command takes. The app defines them
// too, so that they work before the command's name as well as after it.
func logFlags() []cli.Flag { return logflags.Flags() }

// newLogger builds the logger the command's flags ask for (internal/logflags:
// given after the command's name wins over before it). It writes to the
// app's ErrWriter (standard error unless the app says otherwise).
func newLogger(c *cli.Context) (zerolog.Logger, error) { return logflags.New(c) }
