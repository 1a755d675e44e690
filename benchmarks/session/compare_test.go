package session

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

func TestComparePrintsRatios(t *testing.T) {
	mk := func(cpu, rps float64, kernel string, rss float64) *Platform {
		return &Platform{
			Host: harness.Host{OS: "linux", Kernel: kernel, Poller: "epoll", NumCPU: 2},
			Session: map[string]*Result{"w1": {Targets: []string{"tidegate"}, Summary: []Summary{{
				Target:        "tidegate",
				CPUNsPerFrame: harness.Spread{Median: cpu, Min: cpu, Max: cpu, N: 3},
				Proxy:         PhaseStats{RoundtripsPerSec: harness.Spread{Median: rps, N: 3}},
			}}}},
			Idle: &IdleFigures{Target: "tidegate", Sessions: 100, Alive: 100, RSSPerSession: rss, FDsPerSession: 2},
		}
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	for path, p := range map[string]*Platform{a: mk(10000, 20000, "6.1", 4), b: mk(5000, 30000, "24.0", 6)} {
		data, _ := json.Marshal(p)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pa, err := ReadPlatform(a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := ReadPlatform(b)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := Compare(&sb, pa, pb, "a.json", "b.json"); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{"CPU ns/frame", "10000", "5000", "0.50", "1.50", "RSS KiB/session", "100/100", "24.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare output lacks %q:\n%s", want, out)
		}
	}
}

// TestNetnsScriptLayout checks that scripts/netns.sh and Layout agree on
// names and addresses.
func TestNetnsScriptLayout(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "scripts", "netns.sh"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	l := Layout("p")
	for _, want := range []string{"C=$prefix-client", "P=$prefix-proxy", "B=$prefix-backend",
		l.ClientIP + "/24 dev cp0", l.ProxyIP + "/24 dev pc0", l.BackendIP + "/24 dev bp0"} {
		if !strings.Contains(s, want) {
			t.Errorf("scripts/netns.sh lacks %q", want)
		}
	}
	if l.ClientNS != "p-client" || l.ProxyNS != "p-proxy" || l.BackendNS != "p-backend" {
		t.Errorf("layout %+v", l)
	}
	if out, err := exec.Command("sh", "-n", filepath.Join("..", "..", "scripts", "netns.sh")).CombinedOutput(); err != nil {
		t.Errorf("sh -n netns.sh: %v %s", err, out)
	}
}
