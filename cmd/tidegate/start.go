package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/lifecycle"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// startEvent begins the process's one start line (lifecycle.StartEvent)
// for the command c runs.
func startEvent(log zerolog.Logger, c *cli.Context) *zerolog.Event {
	return lifecycle.StartEvent(log, version, c.Command.FullName())
}

// startMessage is the message of the start line.
const startMessage = lifecycle.StartMessage

// configDigest returns the SHA-256 of the proxy configuration in force: of
// the file at path as it is on disk (what sha256sum prints for it), or of the
// embedded default when path is empty.
func configDigest(path string) (string, error) {
	b := config.DefaultYAML()
	if path != "" {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return "", fmt.Errorf("hashing the configuration: %w", err)
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
