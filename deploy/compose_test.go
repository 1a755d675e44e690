package deploy

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/session/proxy/config"
	"gopkg.in/yaml.v3"
)

// composeFile is the part of deploy/compose/compose.yaml the test reads.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		Networks    []string          `yaml:"networks"`
		DependsOn   []string          `yaml:"depends_on"`
		Ports       []string          `yaml:"ports"`
	} `yaml:"services"`
	Networks map[string]struct {
		IPAM struct {
			Config []struct {
				Subnet string `yaml:"subnet"`
			} `yaml:"config"`
		} `yaml:"ipam"`
	} `yaml:"networks"`
}

// TestComposeExample: the compose example of several proxies holds
// together: every proxy service runs tidegate on proxy.yaml with its own
// ID; HAProxy sends PROXY protocol v2 to each of them on the port the
// proxies listen on; proxy.yaml parses as the proxy parses it, takes v2
// headers from the compose network only, and joins the cluster on the
// compose Redis; Redis keeps nothing on disk. Where haproxy is installed,
// haproxy -c checks haproxy.cfg.
func TestComposeExample(t *testing.T) {
	data, err := os.ReadFile("compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	redis, ok := cf.Services["redis"]
	if !ok || !slices.Contains(redis.Command, "--save") || !slices.Contains(redis.Command, "--appendonly") {
		t.Errorf("the redis service %+v: want redis-server with --save \"\" --appendonly no", redis)
	}
	net, ok := cf.Networks["tidegate"]
	if !ok || len(net.IPAM.Config) != 1 {
		t.Fatalf("compose.yaml: want one network, tidegate, with one subnet: %+v", cf.Networks)
	}
	subnet := netip.MustParsePrefix(net.IPAM.Config[0].Subnet)

	hcfg, err := os.ReadFile("compose/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]string{} // name -> host:port
	for _, m := range regexp.MustCompile(`(?m)^\s*server\s+(\S+)\s+(\S+)`).FindAllStringSubmatch(string(hcfg), -1) {
		servers[m[1]] = m[2]
	}
	if !regexp.MustCompile(`(?m)^\s*default-server\s.*\bsend-proxy-v2\b`).Match(hcfg) || !regexp.MustCompile(`(?m)^\s*mode tcp`).Match(hcfg) {
		t.Error("haproxy.cfg: want mode tcp and default-server ... send-proxy-v2")
	}
	hap := cf.Services["haproxy"]
	if !slices.Contains(hap.Volumes, "./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro") {
		t.Errorf("the haproxy service does not mount haproxy.cfg: %v", hap.Volumes)
	}

	ids := map[string]bool{}
	var proxies []string
	for name, s := range cf.Services {
		if !strings.HasPrefix(name, "proxy-") {
			continue
		}
		proxies = append(proxies, name)
		if len(s.Command) < 4 || s.Command[0] != "tidegate" || s.Command[1] != "proxy" || !slices.Contains(s.Command, "/etc/tidegate/proxy.yaml") {
			t.Errorf("%s: command %q", name, s.Command)
		}
		if !slices.Contains(s.Volumes, "./proxy.yaml:/etc/tidegate/proxy.yaml:ro") {
			t.Errorf("%s does not mount proxy.yaml: %v", name, s.Volumes)
		}
		id := s.Environment["TIDEGATE_ID"]
		if id == "" || ids[id] {
			t.Errorf("%s: TIDEGATE_ID %q is empty or another proxy's", name, id)
		}
		ids[id] = true
		if !slices.Contains(s.DependsOn, "redis") || !slices.Contains(hap.DependsOn, name) {
			t.Errorf("%s: want it to depend on redis and haproxy on it", name)
		}

		t.Setenv("TIDEGATE_ID", id)
		pdata, err := os.ReadFile("compose/proxy.yaml")
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := config.Parse(filepath.Join("compose", "proxy.yaml"), pdata)
		if err != nil {
			t.Fatalf("proxy.yaml with TIDEGATE_ID=%s: %v", id, err)
		}
		if cfg.Cluster.ID != id || !strings.HasPrefix(cfg.Cluster.Redis.Reveal(), "redis://redis:") {
			t.Errorf("proxy.yaml: cluster %+v: want the id %s and the compose redis", cfg.Cluster, id)
		}
		l := cfg.Listeners[0]
		_, port, _ := strings.Cut(l.Listen, ":")
		if want := name + ":" + port; servers[name] != want {
			t.Errorf("haproxy.cfg: server %s is %q, want %q", name, servers[name], want)
		}
		if l.ProxyProtocol.Accept != "v2" || !slices.Contains(l.ProxyProtocol.Trusted, subnet.String()) {
			t.Errorf("proxy.yaml: proxy_protocol %+v: want v2 from %s only", l.ProxyProtocol, subnet)
		}
	}
	if len(proxies) < 2 || len(servers) != len(proxies) {
		t.Errorf("proxy services %v, HAProxy servers %v: want two or more, the same", proxies, servers)
	}
	if bin, err := exec.LookPath("haproxy"); err == nil {
		if out, err := exec.Command(bin, "-c", "-f", "compose/haproxy.cfg").CombinedOutput(); err != nil {
			t.Errorf("haproxy -c: %v\n%s", err, out)
		}
	}
}
