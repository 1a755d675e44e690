package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// validTail completes a snippet into a file that is otherwise valid.
const validTail = `
listeners:
  - listen: 0.0.0.0:25577
default_group: main
groups:
  main:
    backends:
      - addr: 127.0.0.1:25565
`

// parseLines parses text as proxy.yaml and returns the lines of its error.
func parseLines(t *testing.T, text string) []string {
	t.Helper()
	cfg, _, err := Parse("proxy.yaml", []byte(text))
	if err == nil {
		t.Fatalf("accepted:\n%s\nconfig %+v", text, cfg)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %T %v: want a *Error", err, err)
	}
	if cfg != nil {
		t.Fatalf("a config came back with the error %v", err)
	}
	return strings.Split(err.Error(), "\n")
}

// TestConfigProblemMessages holds every message: each input gives exactly
// these lines, in this order.
func TestConfigProblemMessages(t *testing.T) {
	t.Setenv("TIDEGATE_TEST_UNSET", "")
	os.Unsetenv("TIDEGATE_TEST_UNSET") // t.Setenv restores it afterwards
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{"issue example: unknown keys do not hide a bad value", `listeners:
  - listen: 127.0.0.1:25577
    colour: blue
default_group: main
groups:
  main: {backends: [{addr: 127.0.0.1:25565}]}
limits:
  handshake_timout: 5s
  connect_timeout: -3s
`, []string{
			`proxy.yaml:3:5: listeners[0].colour: unknown key; the keys here are listen, mode, group and proxy_protocol`,
			`proxy.yaml:8:3: limits.handshake_timout: unknown key (did you mean "handshake_timeout"?)`,
			`proxy.yaml:9:20: limits.connect_timeout: -3s must be positive`,
		}},
		{"misspelt top-level keys", "listners: []\nLimits: {}\nhealth: {cooldwon: 5s}\n" + validTail, []string{
			`proxy.yaml:1:1: listners: unknown key (did you mean "listeners"?)`,
			`proxy.yaml:2:1: Limits: unknown key (did you mean "limits"?)`,
			`proxy.yaml:3:10: health.cooldwon: unknown key (did you mean "cooldown"?)`,
		}},
		{"durations", `limits:
  handshake_timeout: 0
  fin_timeout: 30
  connect_timeout: 1.5
  linger: abc
  idle_timeout: -1m
` + validTail, []string{
			`proxy.yaml:2:22: limits.handshake_timeout: 0s must be positive`,
			`proxy.yaml:3:16: limits.fin_timeout: 30 has no unit: write 30s, or use ms, m or h (only 0 needs none)`,
			`proxy.yaml:4:20: limits.connect_timeout: 1.5 has no unit: write 1.5s, or use ms, m or h (only 0 needs none)`,
			`proxy.yaml:5:11: limits.linger: "abc": want a duration, a number and a unit as in 500ms, 5s or 10m`,
			`proxy.yaml:6:17: limits.idle_timeout: -1m0s is negative (0 turns it off)`,
		}},
		{"numbers and switches", `limits:
  max_sessions: lots
  preroute_bytes: 0x100
  max_frame: 99999999999999999999
loops: -1
reuse_port: yes
` + validTail, []string{
			`proxy.yaml:2:17: limits.max_sessions: "lots": want a whole number`,
			`proxy.yaml:3:19: limits.preroute_bytes: "0x100": want a whole number`,
			`proxy.yaml:4:14: limits.max_frame: "99999999999999999999": want a whole number`,
			`proxy.yaml:5:8: loops: -1 is negative (0 means one per core)`,
			`proxy.yaml:6:13: reuse_port: "yes": want true or false`,
		}},
		{"a value of the wrong shape", `listeners: {listen: 0.0.0.0:25577}
limits: 5
routes:
  - hosts: play.example.com
    group: main
  - hosts: [[a]]
    group: main
groups:
  main: {backends: [{addr: 127.0.0.1:25565}]}
`, []string{
			`proxy.yaml:1:12: listeners: want a list (an item a line, each starting with "- "), found a map`,
			`proxy.yaml:2:9: limits: want a map (key: value lines), found "5"`,
			`proxy.yaml:4:12: routes[0].hosts: want a list (an item a line, each starting with "- "), found "play.example.com"`,
			`proxy.yaml:6:13: routes[1].hosts[0]: want a single value, found a list`,
		}},
		{"addresses and ports", `listeners:
  - listen: 127.0.0.1:99999
  - listen: ":http"
  - listen: 0.0.0.0
  - listen: 1.2.3.4.5:25577
  - listen: 127.0.0.1:99999
default_group: main
groups:
  main:
    backends:
      - addr: 127.0.0.1:0
      - addr: :25565
      - addr: mc-1.example.com:25565
      - addr: mc-1.example.com:25565
      - addr: bad_host!:25565
      - addr: "[::1]:25565"
`, []string{
			`proxy.yaml:2:13: listeners[0].listen: "127.0.0.1:99999": port 99999 is out of range: want 1-65535, or 0 for any free port`,
			`proxy.yaml:3:13: listeners[1].listen: ":http": port "http" is not a number`,
			`proxy.yaml:4:13: listeners[2].listen: "0.0.0.0": want host:port, as 0.0.0.0:25577`,
			`proxy.yaml:5:13: listeners[3].listen: "1.2.3.4.5:25577": "1.2.3.4.5" is neither an IP address nor a host name`,
			`proxy.yaml:6:13: listeners[4].listen: "127.0.0.1:99999": port 99999 is out of range: want 1-65535, or 0 for any free port`,
			`proxy.yaml:11:15: groups.main.backends[0].addr: "127.0.0.1:0": port 0 is out of range: want 1-65535`,
			`proxy.yaml:12:15: groups.main.backends[1].addr: ":25565": no host: want the backend's IP address or name, as 10.0.0.5:25565`,
			`proxy.yaml:14:15: groups.main.backends[3].addr: "mc-1.example.com:25565" is already backends[2] of this group`,
			`proxy.yaml:15:15: groups.main.backends[4].addr: "bad_host!:25565": "bad_host!" is neither an IP address nor a host name`,
		}},
		{"the same key twice, the same address twice", `listeners:
  - listen: 0.0.0.0:25577
  - listen: 0.0.0.0:25577
    mode: raw
    mode: raw
    group: main
default_group: main
groups:
  main: {backends: [{addr: 127.0.0.1:25565}]}
`, []string{
			`proxy.yaml:3:13: listeners[1].listen: "0.0.0.0:25577" is already listeners[0]`,
			`proxy.yaml:5:5: listeners[1].mode: set twice (first on line 4)`,
		}},
		{"groups that do not exist", `listeners:
  - listen: 0.0.0.0:25577
  - listen: 0.0.0.0:25578
    mode: raw
  - listen: 0.0.0.0:25579
    mode: raw
    group: lobyb
  - listen: 0.0.0.0:25580
    mode: tcp
default_group: survival
routes:
  - hosts: [a.example.com]
  - hosts: [b.example.com]
    group: creative
groups:
  lobby: {backends: [{addr: 127.0.0.1:25565}]}
  main: {backends: [{addr: 127.0.0.1:25566}]}
`, []string{
			`proxy.yaml:3:5: listeners[1].group: a raw listener needs the group it relays to`,
			`proxy.yaml:7:12: listeners[2].group: unknown group "lobyb" (did you mean "lobby"?)`,
			`proxy.yaml:9:11: listeners[3].mode: "tcp": want minecraft or raw`,
			`proxy.yaml:10:16: default_group: unknown group "survival"; the groups are lobby and main`,
			`proxy.yaml:12:5: routes[0].group: a route needs the group it sends its hosts to`,
			`proxy.yaml:14:12: routes[1].group: unknown group "creative"; the groups are lobby and main`,
		}},
		{"watermarks: only high set, the default low is above it", "limits: {high_watermark: 512}\n" + validTail, []string{
			`proxy.yaml:1:26: limits.high_watermark: 512 is below low_watermark 1048576 (its default); set low_watermark too`,
		}},
		{"watermarks: only low set, above the default high", "limits: {low_watermark: 4194304}\n" + validTail, []string{
			`proxy.yaml:1:25: limits.low_watermark: 4194304 is above high_watermark 2097152 (its default); set high_watermark too`,
		}},
		{"watermarks: both set", "limits: {low_watermark: 10, high_watermark: 5}\n" + validTail, []string{
			`proxy.yaml:1:25: limits.low_watermark: 10 is above high_watermark 5`,
		}},
		{"routes: wildcards and rewrite_host", `listeners: [{listen: 0.0.0.0:25577}]
routes:
  - hosts: ["*", "*.", "*.example.com", "*.EXAMPLE.com.", "a.*.example.com", "**.example.com", "*example.com", "*.a:b"]
    group: main
  - hosts: [a.example.net]
    group: main
    rewrite_host: "play.internal:99999"
  - {hosts: [b.example.net], group: main, rewrite_host: "bad_host!"}
  - {hosts: [c.example.net], group: main, rewrite_host: "play.internal:"}
  - {hosts: [d.example.net], group: main, rewrite_host: "a:b:c"}
  - {hosts: [e.example.net], group: main, rewrite_host: "[::1]:25565"}
  - {hosts: [f.example.net], group: main, rewrite_host: "2001:db8::1"}
  - {hosts: [g.example.net], group: main, rewrite_host: "play.internal"}
  - {hosts: [h.example.net], group: main, rewrite_host: "play.internal:x"}
groups:
  main: {backends: [{addr: 127.0.0.1:25565}]}
`, []string{
			`proxy.yaml:3:13: routes[0].hosts[0]: "*" would match every host: set default_group to the group for hosts without a route`,
			`proxy.yaml:3:18: routes[0].hosts[1]: "*." would match every host: set default_group to the group for hosts without a route`,
			`proxy.yaml:3:41: routes[0].hosts[3]: host "*.EXAMPLE.com." is already routed by routes[0].hosts[2]`,
			`proxy.yaml:3:59: routes[0].hosts[4]: "a.*.example.com": * may only stand as the first label, as *.example.com`,
			`proxy.yaml:3:78: routes[0].hosts[5]: "**.example.com": * may only stand as the first label, as *.example.com`,
			`proxy.yaml:3:96: routes[0].hosts[6]: "*example.com": * may only stand as the first label, as *.example.com`,
			`proxy.yaml:3:112: routes[0].hosts[7]: "*.a:b" is not a host name`,
			`proxy.yaml:7:19: routes[1].rewrite_host: "play.internal:99999": port 99999 is out of range: want 1-65535`,
			`proxy.yaml:8:57: routes[2].rewrite_host: "bad_host!": "bad_host!" is neither an IP address nor a host name`,
			`proxy.yaml:9:57: routes[3].rewrite_host: "play.internal:": port "" is not a number`,
			`proxy.yaml:10:57: routes[4].rewrite_host: "a:b:c": want a host or host:port, as play.internal or play.internal:25565`,
			`proxy.yaml:14:57: routes[8].rewrite_host: "play.internal:x": port "x" is not a number`,
		}},
		{"strategies and per-address limits", `limits:
  connection_rate: -1
  connection_burst: 0
  login_rate: 0.001
  login_burst: 0
  max_sessions_per_subnet: -5
  subnet_prefix_ipv4: 33
  subnet_prefix_ipv6: 0
  rate_limit_addresses: 10
listeners: [{listen: 0.0.0.0:25577}]
default_group: main
groups:
  main: {strategy: fastest, backends: [{addr: 127.0.0.1:25565}]}
`, []string{
			`proxy.yaml:2:20: limits.connection_rate: -1 is negative (0 turns it off)`,
			`proxy.yaml:4:15: limits.login_rate: 0.001 per second: want 0.01 to 1000000, or 0 to turn it off`,
			`proxy.yaml:6:28: limits.max_sessions_per_subnet: -5: want 0 (no cap) to 2147483647`,
			`proxy.yaml:7:23: limits.subnet_prefix_ipv4: 33: want a prefix length of 1 to 32`,
			`proxy.yaml:8:23: limits.subnet_prefix_ipv6: 0: want a prefix length of 1 to 128`,
			`proxy.yaml:9:25: limits.rate_limit_addresses: 10: want 1024 to 16777216`,
			`proxy.yaml:13:20: groups.main.strategy: "fastest": want weighted-random, round-robin, least-connections or lowest-latency`,
		}},
		{"subnet rates, address prefixes and the per-subnet cap", `limits:
  subnet_connection_rate: -2
  subnet_login_rate: 5
  subnet_login_burst: 0
  address_prefix_ipv4: 33
  address_prefix_ipv6: 56
  subnet_prefix_ipv6: 60
  rate_limit_addresses: 2048
  rate_limit_per_subnet: 9
` + validTail, []string{
			`proxy.yaml:2:27: limits.subnet_connection_rate: -2 is negative (0 turns it off)`,
			`proxy.yaml:4:23: limits.subnet_login_burst: 0: want 1 to 1000000`,
			`proxy.yaml:5:24: limits.address_prefix_ipv4: 33: want a prefix length of 1 to 32`,
			`proxy.yaml:7:23: limits.subnet_prefix_ipv6: /60 is narrower than address_prefix_ipv6 /56: want a subnet of whole addresses (at most 56)`,
			`proxy.yaml:9:26: limits.rate_limit_per_subnet: 9: want 1 to 8 (rate_limit_addresses / 256, so that one subnet cannot crowd the others out of the table)`,
		}},
		{"username pattern", `limits:
  username_pattern: "[A-Za-z"
` + validTail, []string{
			"proxy.yaml:2:21: limits.username_pattern: mc: username pattern \"[A-Za-z\": error parsing regexp: missing closing ]: `[A-Za-z`",
		}},
		{"rates: numbers and bursts", `limits:
  connection_rate: ten
  connection_burst: 0
  login_rate: 1e3
listeners: [{listen: 0.0.0.0:25577}]
default_group: main
groups:
  main: {backends: [{addr: 127.0.0.1:25565}]}
`, []string{
			`proxy.yaml:2:20: limits.connection_rate: "ten": want a number, as 10 or 0.5`,
			`proxy.yaml:3:21: limits.connection_burst: 0: want 1 to 1000000`,
			`proxy.yaml:4:15: limits.login_rate: "1e3": want a number, as 10 or 0.5`,
		}},
		{"placeholders", `shutdown:
  message: ${TIDEGATE_TEST_UNSET}
health:
  offline_message: "${9lives} and ${OPEN"
` + validTail, []string{
			`proxy.yaml:2:12: shutdown.message: environment variable TIDEGATE_TEST_UNSET is not set (give a default as ${TIDEGATE_TEST_UNSET:-value})`,
			`proxy.yaml:4:20: health.offline_message: ${9lives}: want ${NAME} or ${NAME:-default}, NAME made of letters, digits and _`,
			`proxy.yaml:4:20: health.offline_message: "${OPEN": ${ without a closing } (write $${ for a literal ${)`,
		}},
		{"status and chat components", `status:
  cache_ttl: -1s
  timeout: 0
  protocol: newest
  sum_online: maybe
  offline:
    motd: '{"text": 5'
    version_name: "  "
    protocol: 99999999999
    favicon: /nonexistent/icon.png
    online: -1
    max: 3000000000
health:
  offline_message: '{"text":"x","color":7}'
groups:
  main:
    backends: [{addr: 127.0.0.1:25565}]
    offline_message: '{"extra":"no"}'
listeners: [{listen: 0.0.0.0:25577}]
default_group: main
`, []string{
			`proxy.yaml:2:14: status.cache_ttl: -1s is negative (0 turns it off)`,
			`proxy.yaml:3:12: status.timeout: 0s must be positive`,
			`proxy.yaml:4:13: status.protocol: "newest": want backend (the backend's version object) or client (each client's own protocol number)`,
			`proxy.yaml:5:15: status.sum_online: "maybe": want true or false`,
			`proxy.yaml:7:11: status.offline.motd: not a valid chat component: unexpected EOF (a value starting with { is read as JSON; otherwise write text with § codes)`,
			`proxy.yaml:8:19: status.offline.version_name: "  " is blank`,
			`proxy.yaml:9:15: status.offline.protocol: 99999999999: want a protocol version number (0 for each client's own, -1 for none)`,
			`proxy.yaml:10:14: status.offline.favicon: reading the favicon: open /nonexistent/icon.png: no such file or directory`,
			`proxy.yaml:11:13: status.offline.online: -1 is negative`,
			`proxy.yaml:12:10: status.offline.max: 3000000000: want at most 2147483647`,
			`proxy.yaml:14:20: health.offline_message: not a valid chat component: color is not a string`,
			`proxy.yaml:18:22: groups.main.offline_message: not a valid chat component: extra is not an array`,
		}},
		{"PROXY protocol", `listeners:
  - listen: 0.0.0.0:25577
    proxy_protocol: {accept: v3, trusted: [10.0.0.0/8]}
  - listen: 0.0.0.0:25578
    proxy_protocol:
      accept: v2
      trusted: [10.0.0.0/33, 192.0.2.10, "fe80::1%eth0", 2001:db8::/32, lb.example.com, 10.1.2.3/8]
  - listen: 0.0.0.0:25579
    proxy_protocol: {accept: any}
  - listen: 0.0.0.0:25580
    proxy_protocol: {trusted: [10.0.0.1]}
  - listen: 0.0.0.0:25581
    proxy_protocol: {accept: V1, trusted: [10.0.0.1]}
    proxy: {accept: v1}
default_group: main
groups:
  main:
    backends: [{addr: 127.0.0.1:25565}]
    send_proxy_protocol: v3
  other:
    backends: [{addr: 127.0.0.1:25566}]
    send_proxy_protocol: any
  fine:
    backends: [{addr: 127.0.0.1:25567}]
    send_proxy_protocol: v1
    send_proxy: v2
`, []string{
			`proxy.yaml:3:30: listeners[0].proxy_protocol.accept: "v3": want off, v1, v2 or any`,
			`proxy.yaml:7:17: listeners[1].proxy_protocol.trusted[0]: "10.0.0.0/33": want an IP address or a CIDR prefix, as 192.0.2.10 or 10.0.0.0/8`,
			`proxy.yaml:7:42: listeners[1].proxy_protocol.trusted[2]: "fe80::1%eth0": want an IP address or a CIDR prefix, as 192.0.2.10 or 10.0.0.0/8`,
			`proxy.yaml:7:73: listeners[1].proxy_protocol.trusted[4]: "lb.example.com": want an IP address or a CIDR prefix, as 192.0.2.10 or 10.0.0.0/8`,
			`proxy.yaml:9:21: listeners[2].proxy_protocol.trusted: accept is any but no source is trusted, so every connection would be refused: list the load balancers' addresses or CIDR prefixes, as [10.0.0.0/8]`,
			`proxy.yaml:11:21: listeners[3].proxy_protocol.accept: accept is off, so trusted has no effect: set accept to v1, v2 or any (what the load balancer sends), or remove trusted`,
			`proxy.yaml:13:30: listeners[4].proxy_protocol.accept: "V1": want off, v1, v2 or any`,
			`proxy.yaml:14:5: listeners[4].proxy: unknown key; the keys here are listen, mode, group and proxy_protocol`,
			`proxy.yaml:19:26: groups.main.send_proxy_protocol: "v3": want off, v1 or v2`,
			`proxy.yaml:22:26: groups.other.send_proxy_protocol: "any": want off, v1 or v2`,
			`proxy.yaml:26:5: groups.fine.send_proxy: unknown key; the keys here are backends, offline_message, send_proxy_protocol, strategy, login, forwarding, forwarding_key_file, compression_threshold, forwarding_secret, fallback and bungee_channel`,
		}},
		{"a file with nothing in it", "# only a comment\n", []string{
			`proxy.yaml: listeners: at least one listener is needed`,
			`proxy.yaml: groups: at least one backend group is needed`,
		}},
		{"a file that is not a map", "- listen: 0.0.0.0:25577\n", []string{
			`proxy.yaml:1:1: want a map (key: value lines), found a list`,
		}},
		{"a second document", validTail + "---\nloops: 2\n", []string{
			`proxy.yaml:10:1: a second YAML document (after ---): the proxy reads only the first; remove it`,
		}},
		{"an alias that contains itself", "limits: &l\n  <<: *l\n" + validTail, []string{
			`proxy.yaml:2:7: limits: alias *l refers to itself`,
		}},
		{"syntax: unterminated quote", "listeners:\n  - listen: \"0.0.0.0:25577\ngroups: {}\n", []string{
			`proxy.yaml:2:13: syntax error: could not find end character of double-quoted text`,
		}},
		{"syntax: a tab for indentation", "listeners:\n\t- listen: 0.0.0.0:25577\n", []string{
			`proxy.yaml:2:1: syntax error: found character '	' that cannot start any token`,
		}},
		{"syntax: a key one column off", "listeners:\n  - listen: 0.0.0.0:25577\n    mode: raw\n  group: main\n", []string{
			`proxy.yaml:4:3: syntax error: value is not allowed in this context`,
		}},
		{"syntax: two colons on one line", "loops: limits: 1\n", []string{
			`proxy.yaml:1:8: syntax error: mapping value is not allowed in this context`,
		}},
		// goccy/go-yaml accepts this one, so yaml.v3's message stands, and
		// yaml.v3 names no line for it.
		{"syntax: an alias to no anchor", "loops: *four\n", []string{
			`proxy.yaml: syntax error: unknown anchor 'four' referenced`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseLines(t, tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("input:\n%s\ngot:\n%s\nwant:\n%s", tc.in, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestConfigDefaultsMergePerField: a key the file leaves out keeps its
// default even when the file sets its neighbours; one it sets, even to 0,
// keeps what it says.
func TestConfigDefaultsMergePerField(t *testing.T) {
	cfg, warnings, err := Parse("proxy.yaml", []byte(`
listeners:
  - listen: 0.0.0.0:25577
  - listen: 0.0.0.0:25578
    mode: raw
    group: main
default_group: main
groups:
  main:
    backends:
      - addr: 127.0.0.1:25565
      - addr: 127.0.0.1:25566
        weight: 0
limits:
  low_watermark: 1000
  idle_timeout: 0
  max_sessions: 1_000
health:
  interval: 5s
  failures: 5
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings %v", warnings)
	}
	want := defaultConfig()
	want.Limits.LowWatermark, want.Limits.IdleTimeout, want.Limits.MaxSessions = 1000, 0, 1000
	want.Probes.Interval, want.Probes.Failures = 5*time.Second, 5
	if cfg.Limits != want.Limits {
		t.Errorf("limits\n got %+v\nwant %+v", cfg.Limits, want.Limits)
	}
	if cfg.Probes != want.Probes || cfg.Shutdown != want.Shutdown || cfg.Forwarding != ForwardNone {
		t.Errorf("health %+v shutdown %+v forwarding %q", cfg.Probes, cfg.Shutdown, cfg.Forwarding)
	}
	if m := cfg.Listeners[0].Mode; m != ModeMinecraft {
		t.Errorf("listener without a mode: %q", m)
	}
	if s := cfg.Groups["main"].Strategy; s != StrategyWeightedRandom {
		t.Errorf("group without a strategy: %q", s)
	}
	if b := cfg.Groups["main"].Backends; b[0].Weight != 1 || b[1].Weight != 0 {
		t.Errorf("weights %+v: want 1 by default and an explicit 0 kept", b)
	}
}

// TestConfigZeroDurations: a bare 0, quoted or not, turns off what 0 turns
// off, as docs/proxy-config.md says.
func TestConfigZeroDurations(t *testing.T) {
	for _, zero := range []string{"0", `"0"`, "0s"} {
		cfg, _, err := Parse("proxy.yaml", []byte("limits: {idle_timeout: "+zero+"}\nhealth: {interval: "+zero+"}\n"+validTail))
		if err != nil {
			t.Fatalf("%s: %v", zero, err)
		}
		if cfg.Limits.IdleTimeout != 0 || cfg.Probes.Interval != 0 {
			t.Errorf("%s: idle_timeout %v, health.interval %v", zero, cfg.Limits.IdleTimeout, cfg.Probes.Interval)
		}
	}
}

// TestConfigPlaceholders: ${VAR} and ${VAR:-default} are expanded in
// values of every kind; a default stands for an unset or empty variable;
// $${ is a literal ${.
func TestConfigPlaceholders(t *testing.T) {
	t.Setenv("TIDEGATE_TEST_BACKEND", "10.0.0.7:25565")
	t.Setenv("TIDEGATE_TEST_EMPTY", "")
	t.Setenv("TIDEGATE_TEST_LOOPS", "3")
	t.Setenv("TIDEGATE_TEST_NOT_EXPANDED", "oops")
	cfg, _, err := Parse("proxy.yaml", []byte(`
listeners:
  - listen: ${TIDEGATE_TEST_UNSET_LISTEN:-0.0.0.0:25577}
default_group: main
groups:
  main:
    backends:
      - addr: ${TIDEGATE_TEST_BACKEND}
    offline_message: "Costs $${TIDEGATE_TEST_NOT_EXPANDED} and ${TIDEGATE_TEST_EMPTY}."
loops: ${TIDEGATE_TEST_LOOPS}
limits:
  connect_timeout: ${TIDEGATE_TEST_EMPTY:-7s}
`))
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Groups["main"]
	if cfg.Listeners[0].Listen != "0.0.0.0:25577" || g.Backends[0].Addr != "10.0.0.7:25565" || cfg.Loops != 3 ||
		cfg.Limits.ConnectTimeout != 7*time.Second || g.OfflineMessage != "Costs ${TIDEGATE_TEST_NOT_EXPANDED} and ." {
		t.Errorf("expanded to listen %q, addr %q, loops %d, connect_timeout %v, offline_message %q",
			cfg.Listeners[0].Listen, g.Backends[0].Addr, cfg.Loops, cfg.Limits.ConnectTimeout, g.OfflineMessage)
	}
}

// TestConfigWarnings: valid configurations that route nothing somewhere
// get warnings, with positions; a plain one gets none.
func TestConfigWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{"plain", validTail, nil},
		{"no default group and no routes", `listeners:
  - listen: 0.0.0.0:25577
  - listen: 0.0.0.0:25578
    mode: raw
    group: relay
groups:
  main: {backends: [{addr: 127.0.0.1:25565}]}
  relay: {backends: [{addr: 127.0.0.1:25566}]}
`, []string{
			`2:5: listeners[0]: no routes and no default_group: every login is refused with "Unknown server address"; set default_group to the group hosts should go to`,
			`7:9: groups.main: no listener sends sessions here: it is not default_group, a route's group or a raw listener's group`,
		}},
		{"a status fetch may outlast the handshake timeout", "status: {timeout: 5s}\n" + validTail, []string{
			`1:19: status.timeout: 5s is not below limits.handshake_timeout 5s: a ping waiting for a slow status fetch is closed before it is answered`,
		}},
		{"lowest-latency without active checks", `listeners: [{listen: 0.0.0.0:25577}]
default_group: main
groups:
  main:
    strategy: lowest-latency
    backends: [{addr: 127.0.0.1:25565}]
`, []string{
			`5:15: groups.main.strategy: lowest-latency needs the active checks' latency, and health.interval is 0: this group picks by weight at random`,
		}},
		{"every backend at weight 0", `listeners: [{listen: 0.0.0.0:25577}]
default_group: main
groups:
  main:
    backends:
      - {addr: 127.0.0.1:25565, weight: 0}
`, []string{
			`6:7: groups.main.backends: every backend has weight 0, so this group takes no sessions`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, warnings, err := Parse("proxy.yaml", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range warnings {
				got = append(got, w.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestDefaultYAMLStatesTheDefaults: default.yaml writes out every key that
// has a default, with the value the code uses when a file leaves it out,
// and has no warnings.
func TestDefaultYAMLStatesTheDefaults(t *testing.T) {
	cfg, warnings, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings in the embedded default: %v", warnings)
	}
	def := defaultConfig()
	if cfg.Limits != def.Limits || cfg.Probes != def.Probes || cfg.Shutdown != def.Shutdown || cfg.Status != def.Status ||
		!sameAdmin(cfg.Admin, def.Admin) || cfg.Forwarding != def.Forwarding || cfg.Loops != def.Loops || cfg.ReusePort != def.ReusePort {
		t.Errorf("default.yaml and defaultConfig differ:\nfile %+v %+v %+v %+v\ncode %+v %+v %+v %+v",
			cfg.Limits, cfg.Probes, cfg.Shutdown, cfg.Status, def.Limits, def.Probes, def.Shutdown, def.Status)
	}
	d := newDecoder(os.LookupEnv, len(defaultConfigYAML))
	if _, _, err := parse("default.yaml", defaultConfigYAML, d); err != nil {
		t.Fatal(err)
	}
	// Every key, down through nested sections (status.offline).
	var walk func(typ reflect.Type, prefix string)
	walk = func(typ reflect.Type, prefix string) {
		idx, keys := structKeys(typ)
		for _, k := range keys {
			f := typ.Field(idx[k])
			if !d.isSet(prefix + k) {
				t.Errorf("default.yaml does not write %s", prefix+k)
			}
			if f.Type.Kind() == reflect.Struct && f.Type != durationType {
				walk(f.Type, prefix+k+".")
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
}

// sameAdmin compares two admin sections key by key (an empty list and
// none are the same).
func sameAdmin(a, b AdminConfig) bool {
	return a.Enabled == b.Enabled && a.AllowRemote == b.AllowRemote && slices.Equal(a.AllowedHosts, b.AllowedHosts) &&
		a.TokenFile == b.TokenFile && a.token == b.token
}

// TestValidateWithoutAFile: a configuration built in Go is checked the
// same way, its problems named by path alone.
func TestValidateWithoutAFile(t *testing.T) {
	cfg := defaultConfig()
	cfg.Listeners = []ListenerConfig{{Listen: "0.0.0.0:25577", Mode: ModeMinecraft}}
	cfg.Groups = map[string]GroupConfig{"main": {Backends: []BackendConfig{{Addr: "127.0.0.1:65536", Weight: 1}}}}
	cfg.Limits.HighWatermark = 1
	err := cfg.Validate()
	want := `groups.main.backends[0].addr: "127.0.0.1:65536": port 65536 is out of range: want 1-65535` + "\n" +
		`limits.low_watermark: 1048576 is above high_watermark 1`
	if err == nil || err.Error() != want {
		t.Fatalf("got:\n%v\nwant:\n%s", err, want)
	}
	cfg.Groups["main"].Backends[0].Addr = "127.0.0.1:25565"
	cfg.Limits.HighWatermark = 4 << 20
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadReadError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.yaml")
	_, _, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v: want one that names %s and wraps fs.ErrNotExist", err, path)
	}
}

// TestEditDistance: the distance behind "did you mean".
func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"colour", "color", 1}, {"mian", "main", 1},
		{"handshake_timout", "handshake_timeout", 1}, {"mode", "group", 4}, {"ca", "abc", 3},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestREADMEDocumentsEveryKey: the configuration reference in
// docs/proxy-config.md (its YAML block) parses, and names every key of
// every part of the configuration.
func TestREADMEDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile("../../../docs/proxy-config.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "The configuration (YAML")
	if ok {
		_, rest, ok = strings.Cut(rest, "```yaml\n")
	}
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/proxy-config.md has no YAML block after \"The configuration (YAML\"")
	}
	if _, _, err := Parse("docs/proxy-config.md", []byte(block)); err != nil {
		t.Fatalf("docs/proxy-config.md's configuration does not parse: %v", err)
	}
	eachConfigKey(func(path, key string, _ reflect.StructField) {
		if !strings.Contains(block, key+":") {
			t.Errorf("docs/proxy-config.md's configuration does not name %s", joinPath(path, key))
		}
	})
}

// eachConfigKey calls f for every key of every part of the configuration
// (each struct type once, lists and maps looked through), with the path of
// the part it is in and its field.
func eachConfigKey(f func(path, key string, field reflect.StructField)) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		for ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] || ty == durationType {
			return
		}
		seen[ty] = true
		fields, keys := structKeys(ty)
		for _, k := range keys {
			sf := ty.Field(fields[k])
			f(path, k, sf)
			walk(sf.Type, joinPath(path, k))
		}
	}
	walk(reflect.TypeFor[Config](), "")
}

// parseConfig is Parse without a file name or the warnings.
func parseConfig(data []byte) (*Config, error) {
	cfg, _, err := Parse("", data)
	return cfg, err
}
