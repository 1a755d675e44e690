package peers

import (
	"fmt"
	"strings"
)

// Kind names a proxy under test.
type Kind string

// The proxies a benchmark can run.
const (
	KindTidegate      Kind = "tidegate"       // tidegate proxy, Minecraft listener (handshake routing)
	KindTidegateRaw   Kind = "tidegate-raw"   // tidegate proxy, raw listener (plain TCP relay)
	KindGoproxy       Kind = "goproxy"        // the goroutine-per-direction io.Copy relay of this package
	KindHAProxy       Kind = "haproxy"        // HAProxy mode tcp, nosplice
	KindHAProxySplice Kind = "haproxy-splice" // HAProxy mode tcp with option splice-auto
	KindNginx         Kind = "nginx"          // nginx stream {} proxy_pass
	// The proxies that terminate the login (issue #22): they log the
	// backend in themselves with Velocity modern forwarding, so their
	// clients log in at protocol 764 (players.Params.Modern).
	KindTidegateOffline Kind = "tidegate-offline" // tidegate, login: offline
	KindTidegateOnline  Kind = "tidegate-online"  // tidegate, login: online against RelayConfig.SessionServer
	KindGate            Kind = "gate"             // Gate in full mode, onlineMode true (Spec.Gate)
	KindGateOffline     Kind = "gate-offline"     // Gate in full mode, onlineMode false
)

// Kinds lists every Kind in a stable order.
var Kinds = []Kind{KindTidegate, KindTidegateRaw, KindGoproxy, KindHAProxy, KindHAProxySplice, KindNginx,
	KindTidegateOffline, KindTidegateOnline, KindGate, KindGateOffline}

// IsTidegate reports whether k is one of tidegate's own targets.
func (k Kind) IsTidegate() bool { return strings.HasPrefix(string(k), "tidegate") }

// Terminates reports whether k completes the login itself and forwards the
// player to the backend with Velocity modern forwarding.
func (k Kind) Terminates() bool {
	return k == KindTidegateOffline || k == KindTidegateOnline || k == KindGate || k == KindGateOffline
}

// ParseKinds parses a comma-separated list of kinds such as
// "tidegate,haproxy"; duplicates are refused.
func ParseKinds(list string) ([]Kind, error) {
	var out []Kind
	seen := map[Kind]bool{}
	for _, f := range strings.Split(list, ",") {
		k := Kind(strings.ToLower(strings.TrimSpace(f)))
		if k == "" {
			continue
		}
		known := false
		for _, v := range Kinds {
			known = known || v == k
		}
		if !known {
			return nil, fmt.Errorf("target %q: want one of %s", f, kindList())
		}
		if seen[k] {
			return nil, fmt.Errorf("target %q is listed twice", f)
		}
		seen[k] = true
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no target in %q: want one or more of %s", list, kindList())
	}
	return out, nil
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// RelayConfig is what every proxy's configuration is written from.
type RelayConfig struct {
	// Listen is the host:port the proxy accepts clients on.
	Listen string
	// Backend is the host:port every session is relayed to.
	Backend string
	// Cores is the proxy's thread, loop or worker count.
	Cores int
	// Sessions is the number of concurrent sessions to size the proxy for;
	// each is two sockets.
	Sessions int
	// Dir holds the proxy's pid, log and temporary files (nginx).
	Dir string
	// MaxConns, when above 0, is the number of concurrent client sessions
	// the proxy admits, exactly, meant to be reached: HAProxy maxconn
	// (global and frontend), nginx limit_conn on one zone shared by its
	// workers, tidegate limits.max_sessions. 0 sizes every proxy from
	// Sessions with a margin, a limit no benchmark should reach.
	MaxConns int
	// NoFile, when above 0, is the proxy process's descriptor limit: Start
	// runs it under prlimit --nofile=NoFile:NoFile, and HAProxy's ulimit-n
	// and nginx's worker_rlimit_nofile say the same number (so neither
	// tries to raise it). 0 leaves the limit this program has.
	NoFile int
	// SessionServer is the base URL of the session server online-mode
	// targets authenticate players with; ForwardingKeyFile holds the
	// Velocity forwarding secret of the targets that terminate the login.
	SessionServer, ForwardingKeyFile string
	// Login is a tidegate group's login: "" (transparent), offline or
	// online (TidegateConfig).
	Login string
}

// sessionLimit is the concurrent-session limit written into a proxy's
// configuration: MaxConns exactly, or Sessions with a margin.
func (c RelayConfig) sessionLimit() int {
	if c.MaxConns > 0 {
		return c.MaxConns
	}
	return c.Sessions + fdMargin
}

// NginxLimitZone names the limit_conn zone of an nginx configuration with
// MaxConns set; its key is $server_addr, the same for every connection to
// the one listener, so it counts the listener's sessions across workers.
const NginxLimitZone = "sessions"

// fdMargin is the descriptors left over for listeners, logs, pipes and the like.
const fdMargin = 256

// HAProxyConfig returns an HAProxy configuration relaying Listen to Backend
// in mode tcp with Cores threads. splice selects option splice-auto; without
// it splicing is turned off globally (nosplice), as measured in REFERENCE.
// maxconn counts client connections, and HAProxy sizes its descriptor limit
// from it (two sockets per session). At maxconn HAProxy stops polling the
// listener: further clients wait in the kernel's backlog, they are not
// refused. With NoFile set, ulimit-n says it and no strict-limits lets
// HAProxy start although maxconn sessions would need more descriptors.
func HAProxyConfig(c RelayConfig, splice bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# written by tidegate-bench (benchmarks/peers): %s\n", map[bool]string{false: "haproxy", true: "haproxy-splice"}[splice])
	b.WriteString("global\n")
	fmt.Fprintf(&b, "    nbthread %d\n", c.Cores)
	fmt.Fprintf(&b, "    maxconn %d\n", c.sessionLimit())
	if c.NoFile > 0 {
		// HAProxy 2.6 refuses to start when maxconn needs more descriptors
		// than the limit (strict-limits is on by default); the other
		// proxies start and meet the limit at run time, and so does it here.
		fmt.Fprintf(&b, "    ulimit-n %d\n", c.NoFile)
		b.WriteString("    no strict-limits\n")
	}
	fmt.Fprintf(&b, "    pidfile %s/haproxy.pid\n", c.Dir)
	if !splice {
		b.WriteString("    nosplice\n")
	}
	b.WriteString("defaults\n")
	b.WriteString("    mode tcp\n")
	b.WriteString("    timeout connect 5s\n")
	b.WriteString("    timeout client 1h\n")
	b.WriteString("    timeout server 1h\n")
	if splice {
		b.WriteString("    option splice-auto\n")
	}
	b.WriteString("frontend bench\n")
	fmt.Fprintf(&b, "    bind %s\n", c.Listen)
	fmt.Fprintf(&b, "    maxconn %d\n", c.sessionLimit())
	b.WriteString("    default_backend echo\n")
	b.WriteString("backend echo\n")
	fmt.Fprintf(&b, "    server b1 %s\n", c.Backend)
	return b.String()
}

// NginxStreamModule is where Debian's libnginx-mod-stream installs the
// stream module.
const NginxStreamModule = "/usr/lib/nginx/modules/ngx_stream_module.so"

// NginxConfig returns an nginx configuration with a stream {} server
// relaying Listen to Backend with Cores worker processes, running in the
// foreground. worker_connections counts both sockets of a session.
//
// With MaxConns set, worker_connections is sized for MaxConns sessions in
// each worker and limit_conn admits MaxConns sessions in all: the sessions
// past it are accepted and closed at once (nginx's stream limit_conn
// module), which is the closest to tidegate's max_sessions. upstream
// max_conns is not used: without a shared zone it counts per worker, and
// it refuses only after the client's connection was set up. With NoFile
// set, worker_rlimit_nofile says it.
func NginxConfig(c RelayConfig) string {
	sessions := c.Sessions
	if c.MaxConns > 0 {
		sessions = c.MaxConns
	}
	conns := 2*sessions + fdMargin
	rlimit := conns + fdMargin
	if c.NoFile > 0 {
		rlimit = c.NoFile
	}
	var b strings.Builder
	b.WriteString("# written by tidegate-bench (benchmarks/peers): nginx\n")
	fmt.Fprintf(&b, "load_module %s;\n", NginxStreamModule)
	b.WriteString("daemon off;\n")
	fmt.Fprintf(&b, "worker_processes %d;\n", c.Cores)
	fmt.Fprintf(&b, "worker_rlimit_nofile %d;\n", rlimit)
	fmt.Fprintf(&b, "pid %s/nginx.pid;\n", c.Dir)
	fmt.Fprintf(&b, "error_log %s/error.log warn;\n", c.Dir)
	b.WriteString("events {\n")
	fmt.Fprintf(&b, "    worker_connections %d;\n", conns)
	b.WriteString("}\n")
	b.WriteString("stream {\n")
	if c.MaxConns > 0 {
		fmt.Fprintf(&b, "    limit_conn_zone $server_addr zone=%s:1m;\n", NginxLimitZone)
	}
	b.WriteString("    upstream echo {\n")
	fmt.Fprintf(&b, "        server %s;\n", c.Backend)
	b.WriteString("    }\n")
	b.WriteString("    server {\n")
	fmt.Fprintf(&b, "        listen %s;\n", c.Listen)
	if c.MaxConns > 0 {
		fmt.Fprintf(&b, "        limit_conn %s %d;\n", NginxLimitZone, c.MaxConns)
	}
	b.WriteString("        proxy_pass echo;\n")
	b.WriteString("        proxy_connect_timeout 5s;\n")
	b.WriteString("        proxy_timeout 1h;\n")
	b.WriteString("    }\n")
	b.WriteString("}\n")
	return b.String()
}

// TidegateConfig returns a tidegate proxy YAML configuration with one
// listener, Minecraft (raw false) or raw, relaying to Backend on Cores
// loops, with room for Sessions sessions (exactly MaxConns when set), no
// idle timeout and no per-address limits: the load generators connect
// from one loopback address at thousands a second, which the default
// connection and login rates and subnet cap would refuse (HAProxy and
// nginx have none here either).
// A Login of offline or online makes the group terminate the login and
// forward with Velocity modern forwarding under ForwardingKeyFile; online
// mode asks SessionServer.
func TidegateConfig(c RelayConfig, raw bool) string {
	var b strings.Builder
	b.WriteString("# written by tidegate-bench (benchmarks/peers)\n")
	b.WriteString("listeners:\n")
	fmt.Fprintf(&b, "  - listen: %s\n", c.Listen)
	if raw {
		b.WriteString("    mode: raw\n")
		b.WriteString("    group: main\n")
	} else {
		b.WriteString("    mode: minecraft\n")
	}
	b.WriteString("default_group: main\n")
	b.WriteString("groups:\n")
	b.WriteString("  main:\n")
	b.WriteString("    backends:\n")
	fmt.Fprintf(&b, "      - addr: %s\n", c.Backend)
	if c.Login != "" {
		fmt.Fprintf(&b, "    login: %s\n    forwarding: velocity\n    forwarding_key_file: %s\n", c.Login, c.ForwardingKeyFile)
	}
	if c.Login == "online" {
		fmt.Fprintf(&b, "online_mode:\n  session_server: %s\n", c.SessionServer)
	}
	fmt.Fprintf(&b, "loops: %d\n", c.Cores)
	b.WriteString("limits:\n")
	b.WriteString("  idle_timeout: 0s\n")
	b.WriteString("  connection_rate: 0\n")
	b.WriteString("  login_rate: 0\n")
	b.WriteString("  max_sessions_per_subnet: 0\n")
	b.WriteString("  subnet_connection_rate: 0\n")
	b.WriteString("  subnet_login_rate: 0\n")
	fmt.Fprintf(&b, "  max_sessions: %d\n", c.sessionLimit())
	return b.String()
}

// GateConfig returns a configuration of Gate in full mode (not Lite), as
// Velocity runs: onlineMode as online (authenticating with SessionServer's
// hasJoined), the backend as its one server tried first, Velocity modern
// forwarding with secret, compression off (as the fake backend's; the
// benchmarks compress nowhere) and no per-address quota (the load
// generators connect from one address by the thousand).
func GateConfig(c RelayConfig, online bool, secret string) string {
	var b strings.Builder
	b.WriteString("# written by tidegate-bench (benchmarks/peers): gate\n")
	b.WriteString("config:\n")
	fmt.Fprintf(&b, "  bind: %s\n", c.Listen)
	fmt.Fprintf(&b, "  onlineMode: %t\n", online)
	fmt.Fprintf(&b, "  servers:\n    backend: %s\n  try:\n    - backend\n", c.Backend)
	b.WriteString("  compression:\n    threshold: -1\n")
	b.WriteString("  readTimeout: 1h\n")
	fmt.Fprintf(&b, "  forwarding:\n    mode: velocity\n    velocitySecret: %q\n", secret)
	b.WriteString("  quota:\n    connections:\n      enabled: false\n    logins:\n      enabled: false\n")
	if online {
		fmt.Fprintf(&b, "  auth:\n    sessionServerUrl: %s/session/minecraft/hasJoined\n", c.SessionServer)
	}
	b.WriteString("  lite:\n    enabled: false\n")
	return b.String()
}
