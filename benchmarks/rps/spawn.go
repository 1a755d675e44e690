package rps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/tidegate/tidegate/benchmarks/goserver"
	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/procstat"
	"github.com/tidegate/tidegate/protocol/tlv"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/tlvserver"

	"github.com/rs/zerolog"
)

// ServerKind names a server under test.
type ServerKind string

const (
	// Tidegate is tidegate's event-loop TLV server (session/tlvserver).
	Tidegate ServerKind = "tidegate"
	// Goroutine is the goroutine-per-connection peer (benchmarks/goserver).
	Goroutine ServerKind = "goroutine"
)

// Strategy is the core budget of a spawned server, as in the document's
// --strategy: single is one core (one event loop, GOMAXPROCS=1), multi is
// one per core (as many loops as cores, GOMAXPROCS=cores).
type Strategy string

const (
	// Single gives the server one core.
	Single Strategy = "single"
	// Multi gives the server every core.
	Multi Strategy = "multi"
)

// Procs returns the number of cores the strategy gives a server.
func (s Strategy) Procs() int {
	if s == Single {
		return 1
	}
	return runtime.NumCPU()
}

// SpawnMode says where a spawned server runs.
type SpawnMode string

const (
	// Child runs the server as a child process (the tidegate binary
	// re-executed), so that its memory and CPU are measured on their own
	// and GOMAXPROCS applies to it alone.
	Child SpawnMode = "child"
	// InProcess runs the server in this process, next to the generator.
	// Its memory and CPU are not measured; the goroutine server's core
	// budget cannot be limited in process.
	InProcess SpawnMode = "inprocess"
)

// ChildCommandFunc returns the command line, program first, that serves TLV
// as kind on addr with loops event loops: `tidegate serve` for Tidegate,
// `tidegate-bench peer tlv-goroutine` for Goroutine.
type ChildCommandFunc func(kind ServerKind, addr string, loops int) []string

// SpawnConfig says which server to start and how.
type SpawnConfig struct {
	Kind     ServerKind
	Strategy Strategy
	Mode     SpawnMode
	// ChildCommand builds the child's command line; required in Child mode.
	ChildCommand ChildCommandFunc
	// Format is the TLV layout of an in-process server; zero means the default.
	Format tlv.Format
	// Logger receives the in-process server's logs.
	Logger zerolog.Logger
	// StartTimeout bounds how long a child may take to accept connections;
	// 0 means 10 seconds.
	StartTimeout time.Duration
}

// Spawned is a running server under test.
type Spawned struct {
	// Addr is its host:port.
	Addr string
	// PID is the child's process id; 0 in process.
	PID int
	// Procs is the cores it was given.
	Procs int

	stop func(context.Context) error
}

// Spawn starts the server cfg describes and returns once it accepts
// connections.
func Spawn(ctx context.Context, cfg SpawnConfig) (*Spawned, error) {
	if cfg.Kind != Tidegate && cfg.Kind != Goroutine {
		return nil, fmt.Errorf("rps: server kind %q: want %q or %q", cfg.Kind, Tidegate, Goroutine)
	}
	if cfg.Strategy != Single && cfg.Strategy != Multi {
		return nil, fmt.Errorf("rps: strategy %q: want %q or %q", cfg.Strategy, Single, Multi)
	}
	procs := cfg.Strategy.Procs()
	switch cfg.Mode {
	case InProcess:
		return spawnInProcess(cfg, procs)
	case Child:
		return spawnChild(ctx, cfg, procs)
	}
	return nil, fmt.Errorf("rps: spawn mode %q: want %q or %q", cfg.Mode, Child, InProcess)
}

func spawnInProcess(cfg SpawnConfig, procs int) (*Spawned, error) {
	switch cfg.Kind {
	case Tidegate:
		srv, err := tlvserver.New(tlvserver.Config{
			Reactor: reactor.Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: procs, Logger: cfg.Logger},
			Format:  cfg.Format,
		})
		if err != nil {
			return nil, fmt.Errorf("rps: in-process tidegate server: %w", err)
		}
		if err := srv.Start(); err != nil {
			return nil, fmt.Errorf("rps: starting in-process tidegate server: %w", err)
		}
		return &Spawned{Addr: srv.Addr().String(), Procs: procs, stop: srv.Stop}, nil
	default:
		srv, err := goserver.New(goserver.Config{Addr: "127.0.0.1:0", Format: cfg.Format, Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("rps: in-process goroutine server: %w", err)
		}
		if err := srv.Start(); err != nil {
			return nil, fmt.Errorf("rps: starting in-process goroutine server: %w", err)
		}
		return &Spawned{Addr: srv.Addr().String(), Procs: runtime.GOMAXPROCS(0), stop: srv.Stop}, nil
	}
}

func spawnChild(ctx context.Context, cfg SpawnConfig, procs int) (*Spawned, error) {
	if cfg.ChildCommand == nil {
		return nil, errors.New("rps: child mode needs ChildCommand")
	}
	addr, err := harness.FreeAddr("127.0.0.1")
	if err != nil {
		return nil, fmt.Errorf("rps: %w", err)
	}
	argv := cfg.ChildCommand(cfg.Kind, addr, procs)
	if len(argv) == 0 {
		return nil, fmt.Errorf("rps: empty command line for the %s server", cfg.Kind)
	}
	// The child's log goes to this program's stderr, as the generator's does.
	c, err := harness.Start(ctx, harness.ChildSpec{Name: string(cfg.Kind) + " server", Argv: argv, Listen: addr,
		Env: []string{"GOMAXPROCS=" + strconv.Itoa(procs)}, Log: os.Stderr, ReadyTimeout: cfg.StartTimeout})
	if err != nil {
		return nil, fmt.Errorf("rps: %w", err)
	}
	stop := func(ctx context.Context) error {
		if err := c.StopContext(ctx); err != nil {
			return fmt.Errorf("rps: %w", err)
		}
		return nil
	}
	return &Spawned{Addr: addr, PID: c.PID(), Procs: procs, stop: stop}, nil
}

// Stop stops the server, waiting at most until ctx ends.
func (s *Spawned) Stop(ctx context.Context) error { return s.stop(ctx) }

// RSS returns the child's resident set size in bytes (procstat.RSS). It
// fails in process and where /proc is missing.
func (s *Spawned) RSS() (int64, error) { return childFigure(s, "RSS", procstat.RSS) }

// CPU returns the child's time on CPU, summed over its threads
// (procstat.CPU: schedstat nanoseconds). It fails in process and where
// /proc is missing.
func (s *Spawned) CPU() (time.Duration, error) { return childFigure(s, "CPU", procstat.CPU) }

// childFigure reads one figure of the child's process with read.
func childFigure[T any](s *Spawned, what string, read func(pid int) (T, error)) (T, error) {
	var zero T
	if s.PID == 0 {
		return zero, fmt.Errorf("rps: %s of an in-process server is not measured", what)
	}
	v, err := read(s.PID)
	if err != nil {
		return zero, fmt.Errorf("rps: %w", err)
	}
	return v, nil
}
