package session

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"

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
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	host := func(h harness.Host) string {
		return fmt.Sprintf("%s/%s %s, %s (%d cores), %s, %s", h.OS, h.Arch, h.Kernel, h.CPU, h.NumCPU, h.Poller, revisionOf(h))
	}
	fmt.Fprintf(tw, "A\t%s\t%s\n", nameA, host(a.Host))
	fmt.Fprintf(tw, "B\t%s\t%s\n", nameB, host(b.Host))
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\ttarget\tfigure\tA\tB\tB/A\t")
	var workloads []string
	for k := range a.Session {
		if b.Session[k] != nil {
			workloads = append(workloads, k)
		}
	}
	sort.Strings(workloads)
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
			rows := []struct {
				name   string
				va, vb harness.Spread
			}{
				{"proxy roundtrips/s", sa.Proxy.RoundtripsPerSec, sb.Proxy.RoundtripsPerSec},
				{"proxy p99 ms", sa.Proxy.P99Ms, sb.Proxy.P99Ms},
				{"proxy/direct", sa.Ratio, sb.Ratio},
				{"CPU ns/frame", sa.CPUNsPerFrame, sb.CPUNsPerFrame},
				{"syscalls/frame", sa.SyscallsPerFrame, sb.SyscallsPerFrame},
			}
			for _, r := range rows {
				if r.va.N == 0 && r.vb.N == 0 {
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", wl, sa.Target, r.name, num(r.va), num(r.vb), ratio(r.va, r.vb))
			}
		}
	}
	if a.Idle != nil && b.Idle != nil {
		one := func(v float64) harness.Spread { return harness.Spread{Median: v, Min: v, Max: v, N: 1} }
		fmt.Fprintf(tw, "idle\t%s\tRSS KiB/session\t%s\t%s\t%s\t\n", a.Idle.Target, num(one(a.Idle.RSSPerSession)),
			num(one(b.Idle.RSSPerSession)), ratio(one(a.Idle.RSSPerSession), one(b.Idle.RSSPerSession)))
		fmt.Fprintf(tw, "idle\t%s\tfds/session\t%s\t%s\t%s\t\n", a.Idle.Target, num(one(a.Idle.FDsPerSession)),
			num(one(b.Idle.FDsPerSession)), ratio(one(a.Idle.FDsPerSession), one(b.Idle.FDsPerSession)))
		fmt.Fprintf(tw, "idle\t%s\talive/sessions\t%d/%d\t%d/%d\t-\t\n", a.Idle.Target, a.Idle.Alive, a.Idle.Sessions, b.Idle.Alive, b.Idle.Sessions)
	}
	return tw.Flush()
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

func ratio(a, b harness.Spread) string {
	if a.N == 0 || b.N == 0 || a.Median == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", b.Median/a.Median)
}
