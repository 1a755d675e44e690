package proxy

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
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
	Status       StatusConfig           `yaml:"status"`
	Shutdown     ShutdownConfig         `yaml:"shutdown"`
	Admin        AdminConfig            `yaml:"admin"`
	// Cluster joins the proxy to a network of proxies sharing player state
	// through Redis (cluster.go); off by default.
	Cluster ClusterConfig `yaml:"cluster"`
	// Loops is the number of event loops; 0 means one per core.
	Loops int `yaml:"loops"`
	// ReusePort sets SO_REUSEPORT on the listeners, so that several proxy
	// processes can share them (one process holds ~9,900 sessions at
	// 20,000 open files).
	ReusePort bool `yaml:"reuse_port"`

	// dir is the directory of the file the configuration came from, against
	// which relative file names in it are read.
	dir string
}

// ListenerConfig is one listen address.
type ListenerConfig struct {
	Listen string `yaml:"listen"`
	Mode   Mode   `yaml:"mode"`
	// Group is where a raw listener relays to; minecraft listeners route by host.
	Group string `yaml:"group"`
	// ProxyProtocol makes the listener take a PROXY protocol header from
	// trusted load balancers (proxyproto.go); off by default.
	ProxyProtocol ProxyProtocolConfig `yaml:"proxy_protocol"`
}

// RouteConfig sends the listed virtual hosts to a group. A host may be a
// wildcard, *.example.com, which matches every name under example.com (at
// any depth) but not example.com itself; an exact host wins over a
// wildcard, and a longer wildcard over a shorter one.
type RouteConfig struct {
	Hosts []string `yaml:"hosts"`
	Group string   `yaml:"group"`
	// RewriteHost, when set, replaces the host in the handshake toward the
	// backend: "host" keeps the client's port, "host:port" replaces both.
	// What follows the host (a Forge marker) is kept.
	RewriteHost string `yaml:"rewrite_host"`
}

// GroupConfig is a set of interchangeable backends.
type GroupConfig struct {
	Backends []BackendConfig `yaml:"backends"`
	// OfflineMessage, when set, replaces health.offline_message for this
	// group.
	OfflineMessage string `yaml:"offline_message"`
	// SendProxyProtocol, v1 or v2, starts every connection to the group's
	// backends with a PROXY protocol header carrying the client's address
	// (proxyproto.go); off by default.
	SendProxyProtocol string `yaml:"send_proxy_protocol"`
	// Strategy is how a session's backend is chosen among those up (see
	// Strategy); empty means StrategyWeightedRandom.
	Strategy Strategy `yaml:"strategy"`
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
	// Per client address (see ratelimit.go): new connections and logins
	// per second and their bursts (token buckets; a rate of 0 turns one
	// off), concurrent sessions per subnet of the given prefix lengths (0
	// turns the cap off), and how many addresses the buckets track.
	ConnectionRate       float64 `yaml:"connection_rate"`
	ConnectionBurst      int     `yaml:"connection_burst"`
	LoginRate            float64 `yaml:"login_rate"`
	LoginBurst           int     `yaml:"login_burst"`
	MaxSessionsPerSubnet int     `yaml:"max_sessions_per_subnet"`
	SubnetPrefixIPv4     int     `yaml:"subnet_prefix_ipv4"`
	SubnetPrefixIPv6     int     `yaml:"subnet_prefix_ipv6"`
	RateLimitAddresses   int     `yaml:"rate_limit_addresses"`
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

// AdminConfig is the admin API (/api/v1/) and the status page (/) that
// the proxy serves on the metrics address (admin.go). Both keys are read
// on every request, so a reload changes them at once.
type AdminConfig struct {
	// Enabled serves them; on by default. Off, they answer 404.
	Enabled bool `yaml:"enabled"`
	// AllowRemote answers requests that do not come over loopback (from a
	// loopback address to a loopback address); off by default, when such
	// a request gets 403.
	AllowRemote bool `yaml:"allow_remote"`
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

// StatusConfig is how the proxy answers status pings (server list pings,
// modern and pre-1.7) for hosts it routes; see status.go.
type StatusConfig struct {
	// CacheTTL is how long a group's status, fetched from one of its
	// backends by the proxy, answers the pings for that group. 0 turns the
	// cache off: modern pings are relayed to a backend, and legacy pings
	// share only a fetch in flight.
	CacheTTL time.Duration `yaml:"cache_ttl"`
	// Timeout bounds one fetch of a backend's status, connect included.
	Timeout time.Duration `yaml:"timeout"`
	// Protocol is what the answer's version.protocol says.
	Protocol StatusProtocol `yaml:"protocol"`
	// SumOnline makes players.online the sum over the group's backends
	// that are up: a refresh asks each of them.
	SumOnline bool `yaml:"sum_online"`
	// Offline is the answer when the group has no backend up or a refresh
	// failed.
	Offline OfflineStatusConfig `yaml:"offline"`
}

// StatusProtocol selects the protocol number of a cached status answer.
type StatusProtocol string

// Status protocol modes.
const (
	// StatusProtocolBackend keeps the backend's version object: a client of
	// another version lists the server as incompatible, as with the
	// backend itself.
	StatusProtocolBackend StatusProtocol = "backend"
	// StatusProtocolClient answers each client with its own protocol
	// number (for backends that accept several versions).
	StatusProtocolClient StatusProtocol = "client"
)

// OfflineStatusConfig is the proxy's own status answer for a group that has
// no backend up.
type OfflineStatusConfig struct {
	// MOTD is the description: text with § formatting codes, or a chat
	// component in JSON (a value starting with {). Empty means the offline
	// message (groups.NAME.offline_message or health.offline_message); a
	// group's own offline_message also takes precedence over MOTD.
	MOTD string `yaml:"motd"`
	// VersionName is version.name, which clients show in place of the
	// player counts when the protocol is not theirs.
	VersionName string `yaml:"version_name"`
	// Protocol is version.protocol; 0 means each client's own (so the
	// player counts show), -1 makes every client show VersionName.
	Protocol int `yaml:"protocol"`
	// Favicon is the path of a 64x64 PNG (at most MaxFaviconBytes) shown
	// next to the entry; relative to the configuration file's directory.
	// It is read and validated when the configuration is loaded.
	Favicon string `yaml:"favicon"`
	// Online and Max are the player counts.
	Online int `yaml:"online"`
	Max    int `yaml:"max"`

	// favicon is the PNG as a data: URI, read from Favicon by check.
	favicon string
}

// DefaultStatusVersionName is status.offline.version_name when it is not set.
const DefaultStatusVersionName = "tidegate"

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

// embeddedName is the file name problems in the embedded default are
// reported under.
const embeddedName = "default.yaml (embedded)"

// LoadConfig reads a YAML file; an empty path gives the embedded default. It
// is Load without the warnings.
func LoadConfig(path string) (*Config, error) {
	cfg, _, err := Load(path)
	return cfg, err
}

// ParseConfig decodes YAML, fills in defaults and validates the result; the
// error, a *ConfigError, lists every problem found. It is Parse without a
// file name or the warnings.
func ParseConfig(data []byte) (*Config, error) {
	cfg, _, err := Parse("", data)
	return cfg, err
}

// Load reads the configuration at path; an empty path gives the embedded
// default. See Parse for what it returns.
func Load(path string) (*Config, []Problem, error) {
	if path == "" {
		return Parse(embeddedName, defaultConfigYAML)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading proxy config: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes a YAML configuration over the defaults (a key the file
// leaves out keeps its default, one by one: a limits: that sets one limit
// keeps the others), expands ${VAR} and ${VAR:-default} in values from the
// environment, and validates the result. name is the file name problems are
// reported under.
//
// On any problem it returns a *ConfigError that lists all of them: syntax
// (which stops there), unknown keys, values of the wrong kind, placeholders
// and the checks of Validate, each with its line and column. Otherwise it
// returns the configuration and its warnings: what is valid but likely not
// meant, as a listener no host can be routed from.
func Parse(name string, data []byte) (*Config, []Problem, error) {
	return parse(name, data, newDecoder(os.LookupEnv, len(data)))
}

// parse is Parse with the decoder given, so that tests can see where it
// found each key.
func parse(name string, data []byte, d *decoder) (*Config, []Problem, error) {
	invalid := func(ps []Problem) error {
		sortProblems(ps)
		return &ConfigError{File: name, Problems: ps}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, invalid([]Problem{syntaxProblem(data, err)})
	}
	cfg := defaultConfig()
	if name != "" && name != embeddedName {
		cfg.dir = filepath.Dir(name)
	}
	if len(doc.Content) > 0 {
		d.value(doc.Content[0], reflect.ValueOf(&cfg).Elem(), "")
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		at := &next
		if len(next.Content) > 0 {
			at = next.Content[0]
		}
		d.fail(at, "", "a second YAML document (after ---): the proxy reads only the first; remove it")
	case !errors.Is(err, io.EOF):
		d.problems = append(d.problems, syntaxProblem(data, err))
	}
	for _, p := range cfg.check(d.isSet) {
		if !d.suppressed(p.Path) {
			p.Line, p.Col = d.where(p.Path)
			d.problems = append(d.problems, p)
		}
	}
	if len(d.problems) > 0 {
		return nil, nil, invalid(d.problems)
	}
	warnings := cfg.warnings()
	for i := range warnings {
		warnings[i].Line, warnings[i].Col = d.where(warnings[i].Path)
	}
	sortProblems(warnings)
	return &cfg, warnings, nil
}

// defaultConfig is what a file is decoded over: every default but the
// listeners, routes, groups and default_group, which have none. default.yaml
// states the same values (TestDefaultYAMLStatesTheDefaults).
func defaultConfig() Config {
	return Config{
		Forwarding: ForwardNone,
		Limits: Limits{
			HandshakeTimeout: 5 * time.Second,
			ConnectTimeout:   3 * time.Second,
			IdleTimeout:      10 * time.Minute,
			FinTimeout:       30 * time.Second,
			PrerouteBytes:    64 << 10,
			MaxFrame:         1<<21 - 1,
			HighWatermark:    2 << 20,
			LowWatermark:     1 << 20,
			BufferBudget:     1 << 30,
			Linger:           reactor.DefaultLinger,

			ConnectionRate:       10,
			ConnectionBurst:      20,
			LoginRate:            2,
			LoginBurst:           10,
			MaxSessionsPerSubnet: 256,
			SubnetPrefixIPv4:     24,
			SubnetPrefixIPv6:     48,
			RateLimitAddresses:   65536,
		},
		Health: HealthConfig{
			Failures:       3,
			Cooldown:       10 * time.Second,
			Timeout:        2 * time.Second,
			Check:          CheckAuto,
			OfflineMessage: DefaultOfflineMessage,
		},
		Status: StatusConfig{
			CacheTTL: 5 * time.Second,
			Timeout:  2 * time.Second,
			Protocol: StatusProtocolBackend,
			Offline:  OfflineStatusConfig{VersionName: DefaultStatusVersionName},
		},
		Shutdown: ShutdownConfig{DrainTimeout: 30 * time.Second, Message: DefaultShutdownMessage},
		Admin:    AdminConfig{Enabled: true},
		Cluster:  defaultClusterConfig(),
	}
}

// Validate reports every problem in the configuration, each with its path,
// as a *ConfigError without positions.
func (c *Config) Validate() error {
	if ps := c.check(nil); len(ps) > 0 {
		return &ConfigError{Problems: ps}
	}
	return nil
}

// check returns the problems of a decoded configuration. isSet, when not
// nil, tells which keys the file set, so that a message can say a value it
// names is a default.
func (c *Config) check(isSet func(path string) bool) []Problem {
	var ps []Problem
	bad := func(path, format string, args ...any) {
		ps = append(ps, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	groupNames := slices.Sorted(maps.Keys(c.Groups))
	knownGroup := func(path, name string) {
		if _, ok := c.Groups[name]; ok {
			return
		}
		switch s := suggestKey(name, groupNames); {
		case len(groupNames) == 0:
			bad(path, "unknown group %q: no groups are defined", name)
		case s != "":
			bad(path, "unknown group %q (did you mean %q?)", name, s)
		default:
			bad(path, "unknown group %q; the groups are %s", name, joinList(groupNames))
		}
	}
	if len(c.Listeners) == 0 {
		bad("listeners", "at least one listener is needed")
	}
	seen := map[string]int{}
	for i, l := range c.Listeners {
		p := fmt.Sprintf("listeners[%d]", i)
		if msg := checkAddr(l.Listen, true); msg != "" {
			bad(p+".listen", "%s", msg)
		} else if j, dup := seen[l.Listen]; dup {
			bad(p+".listen", "%q is already listeners[%d]", l.Listen, j)
		} else {
			seen[l.Listen] = i
		}
		switch l.Mode {
		case ModeMinecraft:
			if l.Group != "" {
				bad(p+".group", "only raw listeners take a group; minecraft listeners route by host")
			}
		case ModeRaw:
			if l.Group == "" {
				bad(p+".group", "a raw listener needs the group it relays to")
			} else {
				knownGroup(p+".group", l.Group)
			}
		default:
			bad(p+".mode", "%q: want minecraft or raw", l.Mode)
		}
		checkProxyProtocol(bad, p+".proxy_protocol", l.ProxyProtocol)
	}
	if c.DefaultGroup != "" {
		knownGroup("default_group", c.DefaultGroup)
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
			switch msg := routeHostProblem(h, n); {
			case msg != "":
				bad(hp, "%s", msg)
			case hosts[n] != "":
				bad(hp, "host %q is already routed by %s", h, hosts[n])
			default:
				hosts[n] = hp
			}
		}
		if msg := rewriteHostProblem(r.RewriteHost); msg != "" {
			bad(p+".rewrite_host", "%s", msg)
		}
		if r.Group == "" {
			bad(p+".group", "a route needs the group it sends its hosts to")
		} else {
			knownGroup(p+".group", r.Group)
		}
	}
	if len(c.Groups) == 0 {
		bad("groups", "at least one backend group is needed")
	}
	for _, name := range groupNames {
		g := c.Groups[name]
		p := "groups." + name
		if name == "" {
			bad("groups", "a group needs a name")
		}
		if len(g.Backends) == 0 {
			bad(p+".backends", "a group needs at least one backend")
		}
		addrs := map[string]int{}
		for i, b := range g.Backends {
			bp := fmt.Sprintf("%s.backends[%d]", p, i)
			if msg := checkAddr(b.Addr, false); msg != "" {
				bad(bp+".addr", "%s", msg)
			} else if j, dup := addrs[b.Addr]; dup {
				bad(bp+".addr", "%q is already backends[%d] of this group", b.Addr, j)
			} else {
				addrs[b.Addr] = i
			}
			if b.Weight < 0 {
				bad(bp+".weight", "%d is negative (0 takes the backend out of rotation)", b.Weight)
			}
		}
		if g.OfflineMessage != "" {
			validOfflineMessage(bad, p+".offline_message", g.OfflineMessage)
		}
		checkSendProxyProtocol(bad, p+".send_proxy_protocol", g.SendProxyProtocol)
		if !g.Strategy.valid() {
			bad(p+".strategy", "%q: want %s", g.Strategy, strategyList)
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
		{"limits.linger", l.Linger, false},
		{"health.cooldown", c.Health.Cooldown, false},
		{"health.interval", c.Health.Interval, true},
		{"health.timeout", c.Health.Timeout, false},
		{"status.cache_ttl", c.Status.CacheTTL, true},
		{"status.timeout", c.Status.Timeout, false},
		{"shutdown.drain_timeout", c.Shutdown.DrainTimeout, false},
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
	if l.MaxSessions < 0 {
		bad("limits.max_sessions", "%d is negative (0 means as many as the descriptor limit holds)", l.MaxSessions)
	}
	if l.MaxSessionsPerIP < 0 {
		bad("limits.max_sessions_per_ip", "%d is negative (0 means no limit)", l.MaxSessionsPerIP)
	}
	checkSourceLimits(bad, l)
	if l.MaxFrame < 256 || l.MaxFrame > 1<<21-1 {
		bad("limits.max_frame", "%d: want 256..2097151", l.MaxFrame)
	}
	checkWatermarks(bad, l, isSet)
	if l.BufferBudget < 1<<20 {
		bad("limits.buffer_budget", "%d bytes: want at least 1 MiB (1048576)", l.BufferBudget)
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
	validOfflineMessage(bad, "shutdown.message", c.Shutdown.Message)
	c.checkStatus(bad)
	c.checkCluster(bad)
	if c.Loops < 0 {
		bad("loops", "%d is negative (0 means one per core)", c.Loops)
	}
	return ps
}

// checkWatermarks reports watermarks out of order, saying which one is a
// default when the file set only the other.
func checkWatermarks(bad func(path, format string, args ...any), l Limits, isSet func(string) bool) {
	set := func(path string) bool { return isSet == nil || isSet(path) }
	switch {
	case l.HighWatermark <= 0:
		bad("limits.high_watermark", "%d: want a positive number of bytes", l.HighWatermark)
	case l.LowWatermark < 0:
		bad("limits.low_watermark", "%d is negative", l.LowWatermark)
	case l.LowWatermark <= l.HighWatermark:
	case !set("limits.low_watermark"):
		bad("limits.high_watermark", "%d is below low_watermark %d (its default); set low_watermark too", l.HighWatermark, l.LowWatermark)
	case !set("limits.high_watermark"):
		bad("limits.low_watermark", "%d is above high_watermark %d (its default); set high_watermark too", l.LowWatermark, l.HighWatermark)
	default:
		bad("limits.low_watermark", "%d is above high_watermark %d", l.LowWatermark, l.HighWatermark)
	}
}

// checkAddr returns what is wrong with a listen (listen true) or backend
// address, or "". A listen address may leave the host out (every address)
// and take port 0 (any free port: the bound one is logged); a backend needs
// both.
func checkAddr(addr string, listen bool) string {
	example := "10.0.0.5:25565"
	if listen {
		example = "0.0.0.0:25577"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("%q: want host:port, as %s", addr, example)
	}
	n, err := strconv.Atoi(port)
	switch {
	case err != nil || strings.TrimLeft(port, "0123456789") != "":
		return fmt.Sprintf("%q: port %q is not a number", addr, port)
	case listen && (n < 0 || n > 65535):
		return fmt.Sprintf("%q: port %d is out of range: want 1-65535, or 0 for any free port", addr, n)
	case !listen && (n < 1 || n > 65535):
		return fmt.Sprintf("%q: port %d is out of range: want 1-65535", addr, n)
	case host == "" && !listen:
		return fmt.Sprintf("%q: no host: want the backend's IP address or name, as %s", addr, example)
	case host != "" && !validHost(host):
		return fmt.Sprintf("%q: %q is neither an IP address nor a host name", addr, host)
	}
	return ""
}

// validHost reports whether h is an IP address (an IPv6 one may name its
// zone) or a DNS host name.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	name := strings.TrimSuffix(h, ".")
	if name == "" || len(name) > 253 {
		return false
	}
	labels := strings.Split(name, ".")
	for _, label := range labels {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !(c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				return false
			}
		}
	}
	// An all-digit last label is a mistyped address (10.0.0.256,
	// 1.2.3.4.5), not a name: no top-level domain is numeric.
	return strings.TrimLeft(labels[len(labels)-1], "0123456789") != ""
}

// warnings returns what is valid but likely not meant, each with its path.
func (c *Config) warnings() []Problem {
	var ws []Problem
	warn := func(path, format string, args ...any) {
		ws = append(ws, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	reached := map[string]bool{}
	minecraft := false
	for i, l := range c.Listeners {
		if l.Mode == ModeRaw {
			reached[l.Group] = true
			continue
		}
		minecraft = true
		if c.DefaultGroup == "" && len(c.Routes) == 0 {
			warn(fmt.Sprintf("listeners[%d]", i), "no routes and no default_group: every login is refused with %q; set default_group to the group hosts should go to",
				disconnectText(reasonUnknownHost))
		}
	}
	if minecraft {
		reached[c.DefaultGroup] = true
		for _, r := range c.Routes {
			reached[r.Group] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Groups)) {
		if !reached[name] {
			warn("groups."+name, "no listener sends sessions here: it is not default_group, a route's group or a raw listener's group")
			continue
		}
		weighted := false
		for _, b := range c.Groups[name].Backends {
			weighted = weighted || b.Weight > 0
		}
		if !weighted {
			warn("groups."+name+".backends", "every backend has weight 0, so this group takes no sessions")
		}
		if c.Groups[name].Strategy == StrategyLowestLatency && c.Health.Interval == 0 {
			warn("groups."+name+".strategy", "lowest-latency needs the active checks' latency, and health.interval is 0: this group picks by weight at random")
		}
	}
	c.statusWarnings(warn)
	if c.Admin.AllowRemote && !c.Admin.Enabled {
		warn("admin.allow_remote", "has no effect while admin.enabled is false: the admin API and status page are off")
	}
	c.clusterWarnings(warn)
	return ws
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
	default:
		if err := checkChatText(msg); err != "" {
			bad(path, "%s", err)
		}
	}
}

// normalizeHostString lower-cases a configured host and drops one trailing dot,
// as routing does with the handshake address.
func normalizeHostString(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}
