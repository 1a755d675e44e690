package session

import (
	"crypto/rand"
	"encoding/hex"
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
	// Gate is Gate's program, for the gate targets.
	Gate string
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
	opts    LaunchOptions
	backend *peers.Process
	// With a target that terminates the login: the Velocity forwarding
	// secret (its file in dir) and the session server, when one
	// authenticates players.
	secret   []byte
	dir      string
	sessions *sessionServer
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
	if Modern(opts.Kinds) {
		if bs.VelocityKeyFile, err = e.terminating(); err != nil {
			e.Close()
			return nil, err
		}
		bs.JoinDelay = ModernJoinDelay
	}
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

// ModernJoinDelay is how long the backend of a Modern run holds Login
// (play), as a server sends it on its next tick: Gate v0.56.2 switches its
// backend connection to its transition handler only after forwarding the
// configuration's acknowledgement, and loses the player (stuck until
// restarted: "You are already connected") when Login (play) comes back
// before, which a backend on loopback did for about one login in 50 here.
const ModernJoinDelay = 20 * time.Millisecond

// Modern reports whether a run of kinds needs the players workload's
// Modern clients: when one of them terminates the login.
func Modern(kinds []peers.Kind) bool {
	for _, k := range kinds {
		if k.Terminates() {
			return true
		}
	}
	return false
}

// terminating makes what the targets that terminate the login share: a
// Velocity forwarding secret, in a file whose path it returns, and, for
// the online-mode ones, the session server.
func (e *Environment) terminating() (string, error) {
	var err error
	if e.dir, err = os.MkdirTemp("", "tidegate-forwarding-"); err != nil {
		return "", fmt.Errorf("forwarding secret directory: %w", err)
	}
	key := make([]byte, 16)
	rand.Read(key)
	e.secret = []byte(hex.EncodeToString(key))
	path := filepath.Join(e.dir, "forwarding.secret")
	if err := os.WriteFile(path, e.secret, 0o600); err != nil {
		return "", fmt.Errorf("writing the forwarding secret: %w", err)
	}
	for _, k := range e.opts.Kinds {
		if (k == peers.KindTidegateOnline || k == peers.KindGate) && e.sessions == nil {
			if e.sessions, err = startSessionServer(); err != nil {
				return "", err
			}
		}
	}
	return path, nil
}

// VelocitySecret is the forwarding secret the backend expects, nil when
// no target terminates the login: a direct phase's clients answer the
// backend's request with it.
func (e *Environment) VelocitySecret() []byte { return e.secret }

// SessionServerAnswers is how many hasJoined the session server answered.
func (e *Environment) SessionServerAnswers() int64 {
	if e.sessions == nil {
		return 0
	}
	return e.sessions.answers.Load()
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
			HAProxy: e.opts.HAProxy, Nginx: e.opts.Nginx, Syscalls: sys, Gate: e.opts.Gate, GateSecret: string(e.secret),
		}
		if e.dir != "" {
			s.Relay.ForwardingKeyFile = filepath.Join(e.dir, "forwarding.secret")
		}
		if e.sessions != nil {
			s.Relay.SessionServer = e.sessions.URL()
		}
		if e.opts.CPUProfileDir != "" && sys == nil {
			s.CPUProfile = filepath.Join(e.opts.CPUProfileDir, fmt.Sprintf("%s-%d.pprof", k, i))
		}
		if k.IsTidegate() {
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
	if e.sessions != nil {
		errs = append(errs, e.sessions.Close())
	}
	if e.dir != "" {
		os.RemoveAll(e.dir)
	}
	return errors.Join(errs...)
}
