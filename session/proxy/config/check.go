package config

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidegate/tidegate/reactor/flowcontrol"
)

// Validate reports every problem in the configuration, each with its path,
// as an *Error without positions. It reads nothing: a favicon is read by
// Load and Parse.
func (c *Config) Validate() error {
	if ps := c.check(nil); len(ps) > 0 {
		return &Error{Problems: ps}
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
			bad(path, "unknown group %q; the groups are %s", name, JoinWords(groupNames))
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
			n := NormalizeHost(h)
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
		c.checkLogin(bad, p, g)
		c.checkFallback(bad, p, name, g)
		checkBungeeChannel(bad, p, g)
	}
	switch c.Forwarding {
	case ForwardNone, ForwardBungeeCord:
	case ForwardVelocity:
		bad("forwarding", "velocity forwarding is set per group (groups.NAME.forwarding, with login: offline and forwarding_key_file)")
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
		{"health.cooldown", c.Probes.Cooldown, false},
		{"health.interval", c.Probes.Interval, true},
		{"health.timeout", c.Probes.Timeout, false},
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
	h := c.Probes
	if h.Failures < 1 {
		bad("health.failures", "%d: want at least 1", h.Failures)
	}
	switch h.Kind {
	case ProbeAuto, ProbeTCP, ProbeStatus:
	default:
		bad("health.check", "%q: want auto, tcp or status", h.Kind)
	}
	validOfflineMessage(bad, "health.offline_message", h.OfflineMessage)
	validOfflineMessage(bad, "shutdown.message", c.Shutdown.Message)
	c.checkStatus(bad)
	c.checkCluster(bad)
	c.checkAuth(bad)
	c.Admin.check(bad)
	if c.Loops < 0 {
		bad("loops", "%d is negative (0 means one per core)", c.Loops)
	}
	return ps
}

// checkWatermarks reports watermarks out of order, saying which one is a
// default when the file set only the other.
func checkWatermarks(bad func(path, format string, args ...any), l Limits, isSet func(string) bool) {
	set := func(path string) bool { return isSet == nil || isSet(path) }
	switch fault := flowcontrol.CheckWatermarks(l.LowWatermark, l.HighWatermark); {
	case fault == flowcontrol.HighWatermarkNotPositive:
		bad("limits.high_watermark", "%d: want a positive number of bytes", l.HighWatermark)
	case fault == flowcontrol.LowWatermarkNegative:
		bad("limits.low_watermark", "%d is negative", l.LowWatermark)
	case fault == flowcontrol.WatermarksValid:
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
