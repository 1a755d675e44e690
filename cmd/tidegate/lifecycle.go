package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/tidegate/tidegate/internal/revision"
	"github.com/tidegate/tidegate/reactor/fdbudget"
	"github.com/tidegate/tidegate/session/proxy"
)

// processStart is when the process started, for the stop line's uptime.
var processStart = time.Now()

// buildRevision returns the revision the binary was built from
// (internal/revision: make build's stamp, else Go's VCS stamp), or "unknown"
// for a plain go build with -buildvcs=false.
func buildRevision() string {
	if r := revision.This(); r != "" {
		return r
	}
	return "unknown"
}

// startEvent begins the process's one start line ("tidegate starting") with
// what every command has: version, revision, Go, pid, command, and the
// descriptor limit the servers will run under (raised to the hard limit, as
// they do). The command adds its configuration and limits and sends it
// before it starts its servers, so that a start that fails is on record
// with its version too.
func startEvent(log zerolog.Logger, c *cli.Context) *zerolog.Event {
	ev := log.Info().Str("version", version).Str("revision", buildRevision()).Str("go", runtime.Version()).
		Int("pid", os.Getpid()).Str("command", c.Command.FullName())
	if limit, err := fdbudget.RaiseFileLimit(); err == nil {
		ev = ev.Uint64("fd_limit", limit)
	} else {
		ev = ev.AnErr("fd_limit_error", err)
	}
	return ev
}

// spareP makes GOMAXPROCS one more than the event loops (unless the
// GOMAXPROCS environment variable set it) and returns it. A loop waits in
// epoll_wait inside a system call; when every P is held by such a call, the
// runtime's monitor takes a waiting loop's P away after 20 µs and keeps
// waking every 20 µs itself, and every wake-up of that loop then has to get
// a P back. One idle P spare stops both. Measured on w16 with a 2 ms RTT
// (benchmarks/results/2026-12-01-rtt-w16.md): CPU per frame 3,550 against
// 4,783 ns with one loop.
func spareP(loops int) int {
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < loops+1 {
		runtime.GOMAXPROCS(loops + 1)
	}
	return runtime.GOMAXPROCS(0)
}

// startMessage is the message of the start line.
const startMessage = "tidegate starting"

// configDigest returns the SHA-256 of the proxy configuration in force: of
// the file at path as it is on disk (what sha256sum prints for it), or of the
// embedded default when path is empty.
func configDigest(path string) (string, error) {
	b := proxy.DefaultConfigYAML()
	if path != "" {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return "", fmt.Errorf("hashing the configuration: %w", err)
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// logStopped writes the process's one stop line ("stopped"): why it
// stopped, how long it ran, the exit status it is about to end with, and
// the error that status comes from, if any. Level info for a clean stop,
// error otherwise.
func logStopped(log zerolog.Logger, cause string, status int, err error) {
	ev := log.Info()
	if status != 0 || err != nil {
		ev = log.Error().Err(err)
	}
	ev.Str("cause", cause).Dur("uptime", time.Since(processStart).Round(time.Millisecond)).
		Int("exit_status", status).Msg("stopped")
}
