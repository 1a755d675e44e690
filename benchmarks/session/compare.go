package session

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// Platform is one host's results as scripts/compare-platforms.sh writes
// them: session results by workload and the idle probe's figures.
type Platform struct {
	Host    harness.Host       `json:"host"`
	Session map[string]*Result `json:"session"`
	Idle    *IdleFigures       `json:"idle,omitempty"`
}

// IdleFigures are the fields of an idle result (package mcload) that are compared.
type IdleFigures struct {
	Target        string  `json:"target"`
	Sessions      int     `json:"sessions"`
	Alive         int     `json:"alive"`
	RSSPerSession float64 `json:"rss_per_session_kib"`
	FDsPerSession float64 `json:"fds_per_session"`
}

// ReadPlatform reads a platform JSON file.
func ReadPlatform(path string) (*Platform, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var p Platform
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &p, nil
}

// Compare prints a and b side by side: host descriptions, then for every
// workload and target both have, the proxy figures and b's value over a's.
func Compare(w io.Writer, a, b *Platform, nameA, nameB string) error {
	host := func(h harness.Host) string {
		return fmt.Sprintf("%s/%s %s, %s (%d cores), %s, %s", h.OS, h.Arch, h.Kernel, h.CPU, h.NumCPU, h.Poller, revisionOf(h))
	}
	if err := (harness.TextTable{}).Write(w, []string{"A", nameA, host(a.Host)}, [][]string{{"B", nameB, host(b.Host)}}); err != nil {
		return err
	}
	fmt.Fprintln(w)
	var workloads []string
	for k := range a.Session {
		if b.Session[k] != nil {
			workloads = append(workloads, k)
		}
	}
	sort.Strings(workloads)
	var rows [][]string
	for _, wl := range workloads {
		ra, rb := a.Session[wl], b.Session[wl]
		for _, sa := range ra.Summary {
			var sb *Summary
			for i := range rb.Summary {
				if rb.Summary[i].Target == sa.Target {
					sb = &rb.Summary[i]
				}
			}
			if sb == nil {
				continue
			}
			for _, f := range []struct {
				name   string
				va, vb harness.Spread
			}{
				{"proxy roundtrips/s", sa.Proxy.RoundtripsPerSec, sb.Proxy.RoundtripsPerSec},
				{"proxy p99 ms", sa.Proxy.P99Ms, sb.Proxy.P99Ms},
				{"proxy/direct", sa.Ratio, sb.Ratio},
				{"CPU ns/frame", sa.CPUNsPerFrame, sb.CPUNsPerFrame},
				{"syscalls/frame", sa.SyscallsPerFrame, sb.SyscallsPerFrame},
			} {
				if f.va.N != 0 || f.vb.N != 0 {
					rows = append(rows, []string{wl, sa.Target, f.name, num(f.va), num(f.vb), ratio(f.va, f.vb)})
				}
			}
		}
	}
	if a.Idle != nil && b.Idle != nil {
		one := func(v float64) harness.Spread { return harness.Spread{Median: v, Min: v, Max: v, N: 1} }
		for _, f := range []struct {
			name   string
			va, vb float64
		}{{"RSS KiB/session", a.Idle.RSSPerSession, b.Idle.RSSPerSession}, {"fds/session", a.Idle.FDsPerSession, b.Idle.FDsPerSession}} {
			rows = append(rows, []string{"idle", a.Idle.Target, f.name, num(one(f.va)), num(one(f.vb)), ratio(one(f.va), one(f.vb))})
		}
		rows = append(rows, []string{"idle", a.Idle.Target, "alive/sessions", fmt.Sprintf("%d/%d", a.Idle.Alive, a.Idle.Sessions),
			fmt.Sprintf("%d/%d", b.Idle.Alive, b.Idle.Sessions), "-"})
	}
	return harness.TextTable{Right: true, Closed: true}.Write(w, []string{"workload", "target", "figure", "A", "B", "B/A"}, rows)
}

func num(s harness.Spread) string {
	if s.N == 0 {
		return "-"
	}
	switch {
	case s.Median >= 100:
		return fmt.Sprintf("%.0f", s.Median)
	case s.Median >= 1:
		return fmt.Sprintf("%.2f", s.Median)
	}
	return fmt.Sprintf("%.3f", s.Median)
}

// ratio writes b's median over a's (harness.MedianRatio), "-" for none.
func ratio(a, b harness.Spread) string {
	if v, ok := harness.MedianRatio(b, a); ok {
		return harness.Fixed(v, 2)
	}
	return "-"
}
