package proxy

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/tidegate/tidegate/reactor"
)

//go:embed default.yaml
var defaultConfigYAML []byte

// DefaultConfigYAML returns the embedded default configuration.
func DefaultConfigYAML() []byte { return bytes.Clone(defaultConfigYAML) }

// Mode is how a listener treats its connections.
type Mode string

// Listener modes.
const (
	ModeMinecraft Mode = "minecraft" // parse the handshake, route by virtual host
	ModeRaw       Mode = "raw"       // plain TCP relay to one group, no parsing
)

// Forwarding selects how the client's address reaches the backend.
type Forwarding string

// Forwarding modes.
const (
	ForwardNone       Forwarding = "none"
	ForwardBungeeCord Forwarding = "bungeecord" // legacy: host\0ip\0uuid in the handshake address
)

// Config is the proxy's configuration, as read from YAML.
type Config struct {
	Listeners    []ListenerConfig       `yaml:"listeners"`
	DefaultGroup string                 `yaml:"default_group"`
	Routes       []RouteConfig          `yaml:"routes"`
	Groups       map[string]GroupConfig `yaml:"groups"`
	Forwarding   Forwarding             `yaml:"forwarding"`
	Limits       Limits                 `yaml:"limits"`
	Health       HealthConfig           `yaml:"health"`
	Shutdown     ShutdownConfig         `yaml:"shutdown"`
	// Loops is the number of event loops; 0 means one per core.
	Loops int `yaml:"loops"`
	// ReusePort sets SO_REUSEPORT on the listeners, so that several proxy
	// processes can share them (one process holds ~9,900 sessions at
	// 20,000 open files).
	ReusePort bool `yaml:"reuse_port"`
}

// ListenerConfig is one listen address.
type ListenerConfig struct {
	Listen string `yaml:"listen"`
	Mode   Mode   `yaml:"mode"`
	// Group is where a raw listener relays to; minecraft listeners route by host.
	Group string `yaml:"group"`
}

// RouteConfig sends the listed virtual hosts to a group.
type RouteConfig struct {
	Hosts []string `yaml:"hosts"`
	Group string   `yaml:"group"`
}

// GroupConfig is a set of interchangeable backends.
type GroupConfig struct {
	Backends []BackendConfig `yaml:"backends"`
	// OfflineMessage, when set, replaces health.offline_message for this
	// group.
	OfflineMessage string `yaml:"offline_message"`
}

// BackendConfig is one backend server.
type BackendConfig struct {
	Addr   string `yaml:"addr"`
	Weight int    `yaml:"weight"`
}

// Limits bounds what a session may take.
type Limits struct {
	HandshakeTimeout time.Duration `yaml:"handshake_timeout"`
	ConnectTimeout   time.Duration `yaml:"connect_timeout"`
	IdleTimeout      time.Duration `yaml:"idle_timeout"`
	// FinTimeout bounds a half-closed session: once one side has shut down
	// its write side, the other has this long to finish too.
	FinTimeout       time.Duration `yaml:"fin_timeout"`
	PrerouteBytes    int           `yaml:"preroute_bytes"`
	MaxSessions      int           `yaml:"max_sessions"`
	MaxSessionsPerIP int           `yaml:"max_sessions_per_ip"`
	MaxFrame         int           `yaml:"max_frame"`
	HighWatermark    int           `yaml:"high_watermark"`
	// BufferBudget bounds the output queued in the whole process; past it
	// sessions that hold output are paused (see reactor.Config.BufferBudget).
	BufferBudget int64 `yaml:"buffer_budget"`
	LowWatermark int   `yaml:"low_watermark"`
	// Linger bounds how long a closing side waits for its queued output to
	// drain; past it the connection is reset (the peer sees RST, not a clean
	// end), counted and logged.
	Linger time.Duration `yaml:"linger"`
}

// ShutdownConfig is how the proxy drains on SIGTERM or SIGINT.
type ShutdownConfig struct {
	// DrainTimeout is how long open sessions may go on after the proxy
	// stops accepting; then they are closed.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// Message is the disconnect reason a player still logging in gets at
	// the drain deadline.
	Message string `yaml:"message"`
}

// DefaultShutdownMessage is the disconnect reason at a drain deadline.
const DefaultShutdownMessage = "The server is restarting, please reconnect in a moment"

// HealthConfig is backend health: a backend that fails Failures connects
// (or active checks) in a row is down for Cooldown, after which one probe
// (the next session's connect, or an active check) decides whether it is
// back or down for another Cooldown.
type HealthConfig struct {
	// Failures is how many failed connects or checks in a row mark a
	// backend down.
	Failures int `yaml:"failures"`
	// Cooldown is how long a backend marked down gets no sessions.
	Cooldown time.Duration `yaml:"cooldown"`
	// Interval between active checks of each backend; 0 turns them off.
	// A check that takes longer delays the next one.
	Interval time.Duration `yaml:"interval"`
	// Timeout bounds one active check, connect included.
	Timeout time.Duration `yaml:"timeout"`
	// Check is the kind of active check.
	Check CheckKind `yaml:"check"`
	// OfflineMessage is what a player reads when the group has no backend
	// up or its connect fails, in the login disconnect and in the
	// description of the proxy's own status answer.
	OfflineMessage string `yaml:"offline_message"`
}

// CheckKind is how an active health check probes a backend.
type CheckKind string

// Active check kinds.
const (
	// CheckAuto is CheckStatus for groups reached through a minecraft
	// listener and CheckTCP for the others.
	CheckAuto CheckKind = "auto"
	// CheckTCP connects and closes.
	CheckTCP CheckKind = "tcp"
	// CheckStatus does a Minecraft status ping: handshake with next state
	// 1, Status Request, and a JSON Status Response.
	CheckStatus CheckKind = "status"
)

// DefaultOfflineMessage is health.offline_message when it is not set.
const DefaultOfflineMessage = "The server is offline, try again later"

// maxOfflineMessage bounds offline messages, which go into login
// disconnects and status answers.
const maxOfflineMessage = 1024

// LoadConfig reads a YAML file; an empty path gives the embedded default.
func LoadConfig(path string) (*Config, error) {
	data := defaultConfigYAML
	name := "embedded default"
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("reading config: %w", err)
		}
		name = path
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	return cfg, nil
}

// ParseConfig decodes YAML (unknown fields are errors), fills in defaults and
// validates the result; the error lists every problem found.
func ParseConfig(data []byte) (*Config, error) {
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("yaml: %w", err)
	}
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func (c *Config) setDefaults() {
	for i := range c.Listeners {
		if c.Listeners[i].Mode == "" {
			c.Listeners[i].Mode = ModeMinecraft
		}
	}
	for name, g := range c.Groups {
		for i := range g.Backends {
			if g.Backends[i].Weight == 0 {
				g.Backends[i].Weight = 1
			}
		}
		c.Groups[name] = g
	}
	if c.Forwarding == "" {
		c.Forwarding = ForwardNone
	}
	l := &c.Limits
	setDur(&l.HandshakeTimeout, 5*time.Second)
	setDur(&l.ConnectTimeout, 3*time.Second)
	setDur(&l.FinTimeout, 30*time.Second)
	setDur(&c.Shutdown.DrainTimeout, 30*time.Second)
	if c.Shutdown.Message == "" {
		c.Shutdown.Message = DefaultShutdownMessage
	}
	if l.PrerouteBytes == 0 {
		l.PrerouteBytes = 64 << 10
	}
	if l.MaxFrame == 0 {
		l.MaxFrame = 1<<21 - 1
	}
	if l.BufferBudget == 0 {
		l.BufferBudget = 1 << 30
	}
	if l.HighWatermark == 0 && l.LowWatermark == 0 {
		l.HighWatermark, l.LowWatermark = 2<<20, 1<<20
	}
	setDur(&l.Linger, reactor.DefaultLinger)
	h := &c.Health
	if h.Failures == 0 {
		h.Failures = 3
	}
	setDur(&h.Cooldown, 10*time.Second)
	setDur(&h.Timeout, 2*time.Second)
	if h.Check == "" {
		h.Check = CheckAuto
	}
	if h.OfflineMessage == "" {
		h.OfflineMessage = DefaultOfflineMessage
	}
}

func setDur(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

// Validate reports every problem in the configuration, each with its path.
func (c *Config) Validate() error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	if len(c.Listeners) == 0 {
		bad("listeners", "at least one listener is needed")
	}
	seen := map[string]bool{}
	for i, l := range c.Listeners {
		p := fmt.Sprintf("listeners[%d]", i)
		if _, _, err := net.SplitHostPort(l.Listen); err != nil {
			bad(p+".listen", "%q is not host:port: %v", l.Listen, err)
		} else if seen[l.Listen] {
			bad(p+".listen", "%q is listed twice", l.Listen)
		}
		seen[l.Listen] = true
		switch l.Mode {
		case ModeMinecraft:
			if l.Group != "" {
				bad(p+".group", "only raw listeners take a group; minecraft listeners route by host")
			}
		case ModeRaw:
			if l.Group == "" {
				bad(p+".group", "a raw listener needs the group it relays to")
			} else if _, ok := c.Groups[l.Group]; !ok {
				bad(p+".group", "unknown group %q", l.Group)
			}
		default:
			bad(p+".mode", "%q: want minecraft or raw", l.Mode)
		}
	}
	if c.DefaultGroup != "" {
		if _, ok := c.Groups[c.DefaultGroup]; !ok {
			bad("default_group", "unknown group %q", c.DefaultGroup)
		}
	}
	hosts := map[string]string{}
	for i, r := range c.Routes {
		p := fmt.Sprintf("routes[%d]", i)
		if len(r.Hosts) == 0 {
			bad(p+".hosts", "a route needs at least one host")
		}
		for j, h := range r.Hosts {
			hp := fmt.Sprintf("%s.hosts[%d]", p, j)
			n := normalizeHostString(h)
			switch {
			case n == "":
				bad(hp, "empty host")
			case strings.ContainsAny(n, " \x00/:"):
				bad(hp, "%q is not a host name", h)
			case hosts[n] != "":
				bad(hp, "host %q is already routed by %s", h, hosts[n])
			default:
				hosts[n] = hp
			}
		}
		if _, ok := c.Groups[r.Group]; !ok {
			bad(p+".group", "unknown group %q", r.Group)
		}
	}
	if len(c.Groups) == 0 {
		bad("groups", "at least one backend group is needed")
	}
	for name, g := range c.Groups {
		p := "groups." + name
		if len(g.Backends) == 0 {
			bad(p+".backends", "a group needs at least one backend")
		}
		addrs := map[string]int{}
		for i, b := range g.Backends {
			bp := fmt.Sprintf("%s.backends[%d]", p, i)
			if _, _, err := net.SplitHostPort(b.Addr); err != nil {
				bad(bp+".addr", "%q is not host:port: %v", b.Addr, err)
			} else if j, dup := addrs[b.Addr]; dup {
				bad(bp+".addr", "%q is already backends[%d] of this group", b.Addr, j)
			} else {
				addrs[b.Addr] = i
			}
			if b.Weight < 0 {
				bad(bp+".weight", "%d is negative", b.Weight)
			}
		}
		if g.OfflineMessage != "" {
			validOfflineMessage(bad, p+".offline_message", g.OfflineMessage)
		}
	}
	switch c.Forwarding {
	case ForwardNone, ForwardBungeeCord:
	default:
		bad("forwarding", "%q: want none or bungeecord", c.Forwarding)
	}
	l := c.Limits
	for _, d := range []struct {
		path string
		v    time.Duration
		zero bool
	}{
		{"limits.handshake_timeout", l.HandshakeTimeout, false},
		{"limits.connect_timeout", l.ConnectTimeout, false},
		{"limits.idle_timeout", l.IdleTimeout, true},
		{"limits.fin_timeout", l.FinTimeout, false},
		{"shutdown.drain_timeout", c.Shutdown.DrainTimeout, false},
		{"limits.linger", l.Linger, false},
		{"health.cooldown", c.Health.Cooldown, false},
		{"health.interval", c.Health.Interval, true},
		{"health.timeout", c.Health.Timeout, false},
	} {
		switch {
		case d.zero && d.v < 0:
			bad(d.path, "%v is negative (0 turns it off)", d.v)
		case !d.zero && d.v <= 0:
			bad(d.path, "%v must be positive", d.v)
		}
	}
	if l.PrerouteBytes < 64 {
		bad("limits.preroute_bytes", "%d is below 64, too small for a handshake", l.PrerouteBytes)
	}
	if l.BufferBudget < 1<<20 {
		bad("limits.buffer_budget", "%d bytes: want at least 1 MiB (1048576)", l.BufferBudget)
	}
	if l.MaxSessions < 0 {
		bad("limits.max_sessions", "%d is negative", l.MaxSessions)
	}
	if l.MaxSessionsPerIP < 0 {
		bad("limits.max_sessions_per_ip", "%d is negative", l.MaxSessionsPerIP)
	}
	if l.MaxFrame < 256 || l.MaxFrame > 1<<21-1 {
		bad("limits.max_frame", "%d: want 256..2097151", l.MaxFrame)
	}
	if l.HighWatermark <= 0 || l.LowWatermark < 0 || l.LowWatermark > l.HighWatermark {
		bad("limits", "watermarks low %d / high %d: need 0 <= low <= high, high > 0", l.LowWatermark, l.HighWatermark)
	}
	h := c.Health
	if h.Failures < 1 {
		bad("health.failures", "%d: want at least 1", h.Failures)
	}
	switch h.Check {
	case CheckAuto, CheckTCP, CheckStatus:
	default:
		bad("health.check", "%q: want auto, tcp or status", h.Check)
	}
	validOfflineMessage(bad, "health.offline_message", h.OfflineMessage)
	if c.Loops < 0 {
		bad("loops", "%d is negative", c.Loops)
	}
	return errors.Join(errs...)
}

// validOfflineMessage reports an offline message that is empty, too long or
// not UTF-8.
func validOfflineMessage(bad func(path, format string, args ...any), path, msg string) {
	switch {
	case strings.TrimSpace(msg) == "":
		bad(path, "%q is blank", msg)
	case len(msg) > maxOfflineMessage:
		bad(path, "%d bytes: want at most %d", len(msg), maxOfflineMessage)
	case !utf8.ValidString(msg):
		bad(path, "%q is not valid UTF-8", msg)
	}
}

// normalizeHostString lower-cases a configured host and drops one trailing dot,
// as routing does with the handshake address.
func normalizeHostString(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}
