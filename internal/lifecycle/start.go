package lifecycle

import (
	"os"
	"runtime"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/revision"
	"github.com/tidegate/tidegate/reactor/fdbudget"
)

// StartMessage is the message of the process's one start line.
const StartMessage = "tidegate starting"

// buildRevision returns the revision the binary was built from
// (internal/revision: make build's stamp, else Go's VCS stamp), or "unknown"
// for a plain go build with -buildvcs=false.
func buildRevision() string {
	if r := revision.This(); r != "" {
		return r
	}
	return "unknown"
}

// StartEvent begins the process's one start line (StartMessage) with what
// every command has: version, revision, Go, pid, command (its full name),
// and the descriptor limit the servers will run under (raised to the hard
// limit, as they do). The command adds its configuration and limits and
// sends it before it starts its servers, so that a start that fails is on
// record with its version too.
func StartEvent(log zerolog.Logger, version, command string) *zerolog.Event {
	ev := log.Info().Str("version", version).Str("revision", buildRevision()).Str("go", runtime.Version()).
		Int("pid", os.Getpid()).Str("command", command)
	if limit, err := fdbudget.RaiseFileLimit(); err == nil {
		ev = ev.Uint64("fd_limit", limit)
	} else {
		ev = ev.AnErr("fd_limit_error", err)
	}
	return ev
}

// SpareP makes GOMAXPROCS one more than the event loops (unless the
// GOMAXPROCS environment variable set it) and returns it. A loop waits in
// epoll_wait inside a system call; when every P is held by such a call, the
// runtime's monitor takes a waiting loop's P away after 20 µs and keeps
// waking every 20 µs itself, and every wake-up of that loop then has to get
// a P back. One idle P spare stops both. Measured on w16 with a 2 ms RTT
// (benchmarks/results/2026-12-01-rtt-w16.md): CPU per frame 3,550 against
// 4,783 ns with one loop.
func SpareP(loops int) int {
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < loops+1 {
		runtime.GOMAXPROCS(loops + 1)
	}
	return runtime.GOMAXPROCS(0)
}
