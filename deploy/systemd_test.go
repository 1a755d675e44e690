package deploy

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/session/proxy/config"
)

const unitPath = "systemd/tidegate-proxy.service"

// unitFile is a systemd unit: section, then key, then every value the key
// is given, in order (a key may be given more than once).
type unitFile map[string]map[string][]string

// parseUnit reads a unit file as systemd.syntax(7) describes it: [Section]
// headers, Key=Value lines, # and ; comments, and a backslash at the end
// of a line continuing it.
func parseUnit(data string) (unitFile, error) {
	u := unitFile{}
	section := ""
	lines := strings.Split(data, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(lines[i])
		}
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			key, value, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("line %d %q: want Key=Value inside a [Section]", i+1, line)
			}
			key = strings.TrimSpace(key)
			u[section][key] = append(u[section][key], strings.TrimSpace(value))
		}
	}
	return u, nil
}

// last is the value of a key in force: the last one given.
func (u unitFile) last(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// parseTimespan reads a systemd time span (systemd.time(7)) such as "90",
// "60s", "1min 30s" or "2m".
func parseTimespan(s string) (time.Duration, error) {
	units := map[string]time.Duration{
		"": time.Second, "s": time.Second, "sec": time.Second, "second": time.Second, "seconds": time.Second,
		"ms": time.Millisecond, "msec": time.Millisecond,
		"m": time.Minute, "min": time.Minute, "minute": time.Minute, "minutes": time.Minute,
		"h": time.Hour, "hr": time.Hour, "hour": time.Hour, "hours": time.Hour,
	}
	var total time.Duration
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return 0, fmt.Errorf("time span %q: empty", s)
	}
	for _, f := range fields {
		n := strings.IndexFunc(f, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if n < 0 {
			n = len(f)
		}
		v, err := strconv.ParseFloat(f[:n], 64)
		unit, ok := units[f[n:]]
		if err != nil || !ok {
			return 0, fmt.Errorf("time span %q: %q is not a number and a unit", s, f)
		}
		total += time.Duration(v * float64(unit))
	}
	return total, nil
}

// drainMargin is what a stop takes beyond the drain timeout: the linger
// that bounds the last closes (reactor.DefaultLinger, 5 s) and the bound on
// stopping the servers (lifecycle.StopTimeout in internal/lifecycle, 10 s).
const drainMargin = 15 * time.Second

// TestSystemdUnit: the unit is Type=notify, runs the proxy with the config
// and metrics address docs/operations.md documents, stops by SIGTERM with time for
// the default drain, restarts on failure but not on exit 2 (bad
// configuration), has the descriptor limit and the hardening, no
// ExecReload sending SIGHUP, no capability for the ports it listens on,
// and allows the unix socket NOTIFY_SOCKET needs.
func TestSystemdUnit(t *testing.T) {
	data, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	u, err := parseUnit(string(data))
	if err != nil {
		t.Fatalf("%s: %v", unitPath, err)
	}
	def, _, err := config.Parse("", config.DefaultYAML())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"Unit": {"Description": "tidegate Minecraft proxy"},
		"Service": {
			"Type":                     "notify",
			"ExecStart":                "/usr/local/bin/tidegate proxy -c /etc/tidegate/proxy.yaml --metrics-listen 127.0.0.1:9225",
			"KillSignal":               "SIGTERM",
			"Restart":                  "on-failure",
			"RestartPreventExitStatus": "2",
			"LimitNOFILE":              "1048576",
			"NoNewPrivileges":          "yes",
			"ProtectSystem":            "strict",
			"ProtectHome":              "yes",
			"PrivateTmp":               "yes",
			"DynamicUser":              "yes",
			"CapabilityBoundingSet":    "",
			"ExecReload":               "/bin/kill -HUP $MAINPID",
		},
		"Install": {"WantedBy": "multi-user.target"},
	}
	for section, kv := range want {
		for key, value := range kv {
			if _, ok := u[section][key]; !ok {
				t.Errorf("[%s] %s is missing, want %q", section, key, value)
			} else if got := u.last(section, key); got != value {
				t.Errorf("[%s] %s=%q, want %q", section, key, got, value)
			}
		}
	}
	stop, err := parseTimespan(u.last("Service", "TimeoutStopSec"))
	if err != nil {
		t.Errorf("[Service] TimeoutStopSec: %v", err)
	} else if min := def.Shutdown.DrainTimeout + drainMargin; stop <= min {
		t.Errorf("[Service] TimeoutStopSec=%s: want more than the drain timeout %s + %s = %s, or SIGKILL cuts the drain",
			stop, def.Shutdown.DrainTimeout, drainMargin, min)
	}
	families := strings.Fields(u.last("Service", "RestrictAddressFamilies"))
	for _, f := range []string{"AF_UNIX", "AF_INET", "AF_INET6"} {
		if !slices.Contains(families, f) {
			t.Errorf("[Service] RestrictAddressFamilies=%v: want %s (AF_UNIX for NOTIFY_SOCKET and gnet's placeholder socket)", families, f)
		}
	}
	if u.last("Service", "ProcSubset") == "pid" {
		t.Errorf("[Service] ProcSubset=pid hides /proc/stat, which the process collector reads: /metrics would answer 500")
	}
	// A capability to bind is for ports below 1024 only; the default config
	// and the metrics address are above.
	for _, l := range def.Listeners {
		if _, port, err := net.SplitHostPort(l.Listen); err == nil {
			if p, _ := strconv.Atoi(port); p < 1024 {
				t.Fatalf("the default listener %s is below 1024: the unit needs CAP_NET_BIND_SERVICE", l.Listen)
			}
		}
	}
	if caps := u.last("Service", "AmbientCapabilities"); caps != "" {
		t.Errorf("[Service] AmbientCapabilities=%q: no port below 1024 is listened on", caps)
	}
}

// TestSystemdUnitVerifies runs systemd-analyze verify on the unit, where it
// is installed. verify wants ExecStart's binary to exist, so the copy it
// checks runs this test binary instead of /usr/local/bin/tidegate; every
// other line is the unit's. Any output (an unknown key, a bad value) fails,
// and so does an exposure of more than 2.0 by systemd-analyze security.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze := lookPath(t, "systemd-analyze")
	data, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const bin = "ExecStart=/usr/local/bin/tidegate "
	if !strings.Contains(string(data), "\n"+bin) {
		t.Fatalf("%s has no line starting %q", unitPath, bin)
	}
	copyPath := filepath.Join(t.TempDir(), filepath.Base(unitPath))
	if err := os.WriteFile(copyPath, []byte(strings.Replace(string(data), bin, "ExecStart="+self+" ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run(t, t.TempDir(), analyze, "verify", copyPath); strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify %s:\n%s", unitPath, out)
	}
	// The sandbox's exposure, 0 (locked down) to 10 (none); docs/operations.md
	// says 1.4. --offline came with systemd 250.
	var version int
	if _, err := fmt.Sscanf(run(t, "", analyze, "--version"), "systemd %d", &version); err != nil || version < 250 {
		t.Skipf("systemd-analyze %d has no security --offline (%v)", version, err)
	}
	cmd := exec.Command(analyze, "security", "--offline=yes", "--threshold=20", copyPath)
	cmd.Dir = t.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("systemd-analyze security: exposure above 2.0 (%v):\n%s", err, out)
	}
}

func TestParseTimespan(t *testing.T) {
	for in, want := range map[string]time.Duration{"90": 90 * time.Second, "60s": time.Minute, "1min 30s": 90 * time.Second, "2m": 2 * time.Minute, "500ms": 500 * time.Millisecond} {
		if got, err := parseTimespan(in); err != nil || got != want {
			t.Errorf("parseTimespan(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "5 parsecs"} {
		if _, err := parseTimespan(in); err == nil {
			t.Errorf("parseTimespan(%q): want an error", in)
		}
	}
}
