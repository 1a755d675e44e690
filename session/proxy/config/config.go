// Package config is the proxy's configuration: its types, their decoding
// from YAML over the defaults, and the checks of a decoded configuration.
// It holds no runtime state and imports none of the proxy's runtime; its
// checks are pure functions of the configuration (the one file a
// configuration names, status.offline.favicon, is read by Load and Parse).
// The proxy reads what it needs from the types and their methods.
package config

import (
	"time"
)

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
	// Probes is the backends' health: the circuit breaker and the active
	// probes. Its key stays health, as operators know it.
	Probes   ProbeConfig    `yaml:"health"`
	Status   StatusConfig   `yaml:"status"`
	Shutdown ShutdownConfig `yaml:"shutdown"`
	Admin    AdminConfig    `yaml:"admin"`
	// Cluster joins the proxy to a network of proxies sharing player state
	// through Redis (session/cluster); off by default.
	Cluster ClusterConfig `yaml:"cluster"`
	// Auth is the online-mode authentication of groups with login: online.
	Auth AuthConfig `yaml:"online_mode"`
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
	// trusted load balancers; off by default.
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
	// backends with a PROXY protocol header carrying the client's address;
	// off by default.
	SendProxyProtocol string `yaml:"send_proxy_protocol"`
	// Strategy is how a session's backend is chosen among those up (see
	// Strategy); empty means StrategyWeightedRandom.
	Strategy Strategy `yaml:"strategy"`
	// Login is who completes the group's logins (see Login); empty means
	// LoginTransparent.
	Login Login `yaml:"login"`
	// Forwarding, when set, replaces the top-level forwarding for this
	// group; velocity is set here only.
	Forwarding Forwarding `yaml:"forwarding"`
	// ForwardingKeyFile is the file holding the velocity forwarding
	// secret, relative to the configuration file's directory; read by Load
	// and Parse.
	ForwardingKeyFile string `yaml:"forwarding_key_file"`
	// CompressionThreshold is what a login the proxy completes tells the
	// client: backend (the default: the backend's own threshold), off, or
	// a size in bytes.
	CompressionThreshold string `yaml:"compression_threshold"`
	// ForwardingSecret is the velocity forwarding secret itself, as a
	// ${VAR} placeholder would give it; Load and Parse set it from
	// ForwardingKeyFile when that is set (only one of them may be).
	ForwardingSecret Secret `yaml:"forwarding_secret"`
	// Fallback are the groups, in order, a terminated 1.20.2+ player of
	// this group is moved to when its backend ends (session/proxy/move).
	Fallback []string `yaml:"fallback"`
	// BungeeChannel is whether the proxy answers, for the terminated
	// sessions of this group, the BungeeCord plugin channel (see
	// BungeeChannel); empty means BungeeChannelOn.
	BungeeChannel BungeeChannel `yaml:"bungee_channel"`

	// secretFromFile says ForwardingSecret was read from ForwardingKeyFile,
	// so that validating the configuration again does not see it set twice.
	secretFromFile bool
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
	// BufferBudget bounds the output queued in the whole process, with the
	// input sessions hold before they relay; past it sessions that hold
	// output are paused (see reactor.Config.BufferBudget) and new
	// connections are refused.
	BufferBudget int64 `yaml:"buffer_budget"`
	LowWatermark int   `yaml:"low_watermark"`
	// Linger bounds how long a closing side waits for its queued output to
	// drain; past it the connection is reset (the peer sees RST, not a clean
	// end), counted and logged.
	Linger time.Duration `yaml:"linger"`
	// Per client address: new connections and logins
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
	// UsernamePattern is the regular expression a Login Start name must
	// match as a whole (mc.UsernamePolicy); other names are refused
	// before they reach a backend, a log line or the cluster.
	UsernamePattern string `yaml:"username_pattern"`

	// Rates per subnet as well as per address, so that rotating through
	// the addresses of a subnet does not multiply them (package
	// ratelimit): new connections and logins per second per subnet
	// (subnet_prefix_ipv4 and subnet_prefix_ipv6) and their bursts (a rate
	// of 0 turns one off); the prefix lengths of an address, whose own
	// buckets the other rates fill; and how many address buckets one
	// subnet may hold, so that it cannot crowd out the others.
	SubnetConnectionRate  float64 `yaml:"subnet_connection_rate"`
	SubnetConnectionBurst int     `yaml:"subnet_connection_burst"`
	SubnetLoginRate       float64 `yaml:"subnet_login_rate"`
	SubnetLoginBurst      int     `yaml:"subnet_login_burst"`
	AddressPrefixIPv4     int     `yaml:"address_prefix_ipv4"`
	AddressPrefixIPv6     int     `yaml:"address_prefix_ipv6"`
	RateLimitPerSubnet    int     `yaml:"rate_limit_per_subnet"`
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
// the proxy serves on the metrics address (session/proxy/admin), and the
// access policy of every route there (internal/adminaccess). A reload
// changes them at once.
type AdminConfig struct {
	// Enabled serves them; on by default. Off, they answer 404.
	Enabled bool `yaml:"enabled"`
	// AllowRemote answers reads and writes that do not come over loopback
	// (from a loopback address to a loopback address), whatever their
	// Host header; off by default, when such a request gets 403.
	AllowRemote bool `yaml:"allow_remote"`
	// AllowedHosts are the names a request's Host header may give, beside
	// localhost and loopback addresses, while AllowRemote is off (another
	// gets 403: DNS rebinding).
	AllowedHosts []string `yaml:"allowed_hosts"`
	// TokenFile names the file (relative to the configuration's directory)
	// holding the token that writes, POST /-/reload, must send; read by
	// Load and Parse, so on each reload. Unset, writes over HTTP are off.
	TokenFile SecretFile `yaml:"token_file"`

	token Secret // read from TokenFile
}

// DefaultShutdownMessage is the disconnect reason at a drain deadline.
const DefaultShutdownMessage = "The server is restarting, please reconnect in a moment"

// ProbeConfig is backend health (the health: key): a backend that fails
// Failures connects (or active probes) in a row is down for Cooldown, after
// which one trial (the next session's connect, or an active probe) decides
// whether it is back or down for another Cooldown.
type ProbeConfig struct {
	// Failures is how many failed connects or probes in a row mark a
	// backend down.
	Failures int `yaml:"failures"`
	// Cooldown is how long a backend marked down gets no sessions.
	Cooldown time.Duration `yaml:"cooldown"`
	// Interval between active probes of each backend; 0 turns them off.
	// A probe that takes longer delays the next one.
	Interval time.Duration `yaml:"interval"`
	// Timeout bounds one active probe, connect included.
	Timeout time.Duration `yaml:"timeout"`
	// Kind is the kind of active probe (the key check).
	Kind ProbeKind `yaml:"check"`
	// OfflineMessage is what a player reads when the group has no backend
	// up or its connect fails, in the login disconnect and in the
	// description of the proxy's own status answer.
	OfflineMessage string `yaml:"offline_message"`
}

// StatusConfig is how the proxy answers status pings (server list pings,
// modern and pre-1.7) for hosts it routes.
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

	// favicon is the PNG as a data: URI, read from Favicon by Parse.
	favicon string
}

// DefaultStatusVersionName is status.offline.version_name when it is not set.
const DefaultStatusVersionName = "tidegate"

// ProbeKind is how an active probe tries a backend.
type ProbeKind string

// Active probe kinds.
const (
	// ProbeAuto is ProbeStatus for groups reached through a minecraft
	// listener and ProbeTCP for the others.
	ProbeAuto ProbeKind = "auto"
	// ProbeTCP connects and closes.
	ProbeTCP ProbeKind = "tcp"
	// ProbeStatus does a Minecraft status ping: handshake with next state
	// 1, Status Request, and a JSON Status Response.
	ProbeStatus ProbeKind = "status"
)

// DefaultOfflineMessage is health.offline_message when it is not set.
const DefaultOfflineMessage = "The server is offline, try again later"

// maxOfflineMessage bounds offline messages, which go into login
// disconnects and status answers.
const maxOfflineMessage = 1024

// UnknownHostDisconnect is the disconnect reason of a login for a host that
// has no route.
const UnknownHostDisconnect = "Unknown server address"
