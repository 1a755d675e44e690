package session

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/peers"
)

// LaunchOptions says which processes a benchmark starts.
type LaunchOptions struct {
	Kinds []peers.Kind
	// ProxyCores is every proxy's thread/loop/worker count.
	ProxyCores int
	// GoMaxProcs is GOMAXPROCS for goproxy; 0 means ProxyCores.
	GoMaxProcs   int
	BackendLoops int
	// Sessions sizes the proxies' connection limits.
	Sessions int
	// Executable is the tidegate binary (proxy and backend); empty means
	// this program.
	Executable string
	// PeerExecutable is the tidegate-bench binary (goproxy); empty means
	// this program.
	PeerExecutable string
	HAProxy, Nginx string
	// CPUProfileDir, when set, makes each tidegate proxy write a Go CPU
	// profile into this directory (named after its target and index).
	CPUProfileDir string
	// TidegateMetrics makes each tidegate proxy serve its metrics and
	// profiles on a free loopback port (Target.MetricsAddr).
	TidegateMetrics bool
	// TidegateEnv is added to each tidegate proxy's environment.
	TidegateEnv []string
	// ReplyDelay makes the backend hold every play echo this long (half of
	// Config.AppRTT).
	ReplyDelay time.Duration
	// ChunkReplies makes the backend answer chunk requests (the players
	// workload).
	ChunkReplies bool
	// Netns places backend and proxies in the namespaces of a layout made
	// by scripts/netns.sh; nil runs everything on loopback.
	Netns *NetnsLayout
}

// Environment is a started backend and the proxies under test.
type Environment struct {
	opts     LaunchOptions
	backend  *peers.Process
	proxies  []*peers.Process
	perfDirs []string
	counted  int
}

// Launch starts the backend, then every proxy, each as its own process.
func Launch(opts LaunchOptions) (*Environment, error) {
	if opts.ProxyCores < 1 {
		return nil, fmt.Errorf("proxy cores %d: want at least 1", opts.ProxyCores)
	}
	e := &Environment{opts: opts}
	backendAddr, err := e.addr("backend", 0)
	if err != nil {
		return nil, err
	}
	bs := peers.BackendSpec{Listen: backendAddr, Loops: max(opts.BackendLoops, 1), Executable: opts.Executable, ReplyDelay: opts.ReplyDelay,
		ChunkReplies: opts.ChunkReplies}
	if opts.Netns != nil {
		bs.Wrap = opts.Netns.Exec(opts.Netns.BackendNS)
	}
	if e.backend, err = peers.StartBackend(bs); err != nil {
		return nil, err
	}
	for i, k := range opts.Kinds {
		p, err := e.startProxy(k, i, nil)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.proxies = append(e.proxies, p)
	}
	return e, nil
}

// addr picks a listen address: a free loopback port, or a fixed port on
// the namespace's address.
func (e *Environment) addr(role string, i int) (string, error) {
	if n := e.opts.Netns; n != nil {
		if role == "backend" {
			return net.JoinHostPort(n.BackendIP, "25565"), nil
		}
		return net.JoinHostPort(n.ProxyIP, strconv.Itoa(26000+i)), nil
	}
	return harness.FreeAddr("127.0.0.1")
}

func (e *Environment) startProxy(k peers.Kind, i int, sys *peers.SyscallCounter) (*peers.Process, error) {
	start := func(listen string) (*peers.Process, error) {
		s := peers.Spec{
			Kind:       k,
			Relay:      peers.RelayConfig{Listen: listen, Backend: e.backend.Addr(), Cores: e.opts.ProxyCores, Sessions: max(e.opts.Sessions, 64)},
			GoMaxProcs: e.opts.GoMaxProcs, Executable: e.opts.Executable, PeerExecutable: e.opts.PeerExecutable,
			HAProxy: e.opts.HAProxy, Nginx: e.opts.Nginx, Syscalls: sys,
		}
		if e.opts.CPUProfileDir != "" && sys == nil {
			s.CPUProfile = filepath.Join(e.opts.CPUProfileDir, fmt.Sprintf("%s-%d.pprof", k, i))
		}
		if k == peers.KindTidegate || k == peers.KindTidegateRaw {
			s.Env = e.opts.TidegateEnv
			if e.opts.TidegateMetrics {
				var err error
				if s.MetricsListen, err = harness.FreeAddr("127.0.0.1"); err != nil {
					return nil, err
				}
			}
		}
		if e.opts.Netns != nil {
			s.Wrap = e.opts.Netns.Exec(e.opts.Netns.ProxyNS)
		}
		return peers.Start(s)
	}
	if e.opts.Netns != nil || sys != nil {
		// A fixed namespace port is not taken by chance, and perf's
		// control pipes serve one start only.
		listen, err := e.addr("proxy", i)
		if err != nil {
			return nil, err
		}
		return start(listen)
	}
	return harness.RetryFreePort("127.0.0.1", start)
}

// Backend returns the backend's address.
func (e *Environment) Backend() string { return e.backend.Addr() }

// Targets returns the running proxies.
func (e *Environment) Targets() []Target {
	out := make([]Target, len(e.proxies))
	for i, p := range e.proxies {
		out[i] = Target{Name: p.Name(), Addr: p.Addr(), PIDs: p.PIDs(), MetricsAddr: p.MetricsAddr}
	}
	return out
}

// StartCounted starts another copy of the named proxy under perf.
func (e *Environment) StartCounted(name string) (CountedTarget, error) {
	dir, err := os.MkdirTemp("", "tidegate-perf-")
	if err != nil {
		return CountedTarget{}, fmt.Errorf("perf directory: %w", err)
	}
	e.perfDirs = append(e.perfDirs, dir)
	sys, err := peers.NewSyscallCounter(dir)
	if err != nil {
		return CountedTarget{}, err
	}
	e.counted++
	p, err := e.startProxy(peers.Kind(name), 1000+e.counted, sys)
	if err != nil {
		return CountedTarget{}, err
	}
	return CountedTarget{Target: Target{Name: name, Addr: p.Addr(), PIDs: p.PIDs()}, Counter: sys, Stop: p.Stop}, nil
}

// Close stops every proxy and then the backend.
func (e *Environment) Close() error {
	var errs []error
	for _, p := range e.proxies {
		errs = append(errs, p.Stop())
	}
	if e.backend != nil {
		errs = append(errs, e.backend.Stop())
	}
	for _, d := range e.perfDirs {
		os.RemoveAll(d)
	}
	return errors.Join(errs...)
}
