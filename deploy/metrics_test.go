package deploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/metrics"
	"github.com/tidegate/tidegate/session/proxy"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
	"github.com/tidegate/tidegate/session/pushserver"
	"github.com/tidegate/tidegate/session/tlvserver"
)

// metricSet is what tidegate exports: every tidegate_ metric with its label
// names, and the label values a scrape of real servers showed.
type metricSet struct {
	// labels maps a metric to its label names.
	labels map[string]map[string]bool
	// values maps a metric and a label to the values scraped; metrics that
	// only appear under conditions the scrape did not meet (accept errors)
	// are known from their descriptions and have none.
	values map[string]map[string]map[string]bool
}

var (
	exportedOnce sync.Once
	exported     *metricSet
	errExported  error
)

// exportedMetrics returns the metrics tidegate exports, collected once per
// test binary by scrapeExported.
func exportedMetrics(t *testing.T) *metricSet {
	t.Helper()
	exportedOnce.Do(func() { exported, errExported = scrapeExported() })
	if errExported != nil {
		t.Fatal(errExported)
	}
	return exported
}

// scrapeExported starts, on loopback, a proxy whose backend passes its
// active TCP checks, a TLV server and a push server, registers the
// collectors the commands register (the reactor's for every server, and
// each server's own) in a pedantic registry, which also checks that what
// they collect is what they describe, and gathers. The metrics only
// described (collected only once something happened, such as an accept
// error) are added from the descriptions. Everything is stopped before it
// returns.
func scrapeExported() (*metricSet, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	go func() { // the backend: accepts and closes, which a tcp check passes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	cfg, _, err := config.Parse("", fmt.Appendf(nil, "listeners: [{listen: \"127.0.0.1:0\", mode: raw, group: main}]\n"+
		"groups: {main: {backends: [{addr: %q}]}}\nhealth: {interval: 20ms, timeout: 1s, check: tcp}\nloops: 1\n", ln.Addr()))
	if err != nil {
		return nil, fmt.Errorf("proxy config: %w", err)
	}
	p, err := proxy.New(cfg, zerolog.Nop())
	if err != nil {
		return nil, err
	}
	ts, err := tlvserver.New(tlvserver.Config{Reactor: reactor.Config{Addrs: []string{"127.0.0.1:0"}, Loops: 1, Logger: zerolog.Nop()}})
	if err != nil {
		return nil, err
	}
	pcfg := pushserver.DefaultConfig()
	pcfg.PublishAddr, pcfg.SubscribeAddr = "127.0.0.1:0", "127.0.0.1:0"
	pcfg.Loops, pcfg.PublishLoops, pcfg.Logger = 1, 1, zerolog.Nop()
	ps, err := pushserver.New(pcfg)
	if err != nil {
		return nil, err
	}
	var stops []func(context.Context) error
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, stop := range stops {
			_ = stop(ctx)
		}
	}()
	for _, s := range []struct {
		start func() error
		stop  func(context.Context) error
	}{{p.Start, p.Stop}, {ts.Start, ts.Stop}, {ps.Start, ps.Stop}} {
		if err := s.start(); err != nil {
			return nil, err
		}
		stops = append(stops, s.stop)
	}
	// The check latency is exported once a check has passed.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if bs := p.BackendHealth(); len(bs) == 1 && bs[0].Up && bs[0].Latency > 0 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the proxy's backend %s did not pass a check in 10 s: %+v", ln.Addr(), p.BackendHealth())
		}
	}
	// One session through the proxy, so the counters have moved.
	addr, err := p.Addr(0)
	if err != nil {
		return nil, err
	}
	if c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second); err == nil {
		_, _ = c.Write([]byte("ping"))
		_ = c.Close()
	}
	pub, sub := ps.Reactors()
	collectors := []prometheus.Collector{
		metrics.NewCollector(map[string]*reactor.Server{"proxy": p.Reactor(), "tlv": ts.Reactor(), "publish": pub, "subscribe": sub}),
		proxymetrics.NewCollector(p), tlvserver.NewCollector(ts), pushserver.NewCollector(ps),
	}
	reg := prometheus.NewPedanticRegistry()
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering %T: %w", c, err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering: %w", err)
	}
	m := &metricSet{labels: map[string]map[string]bool{}, values: map[string]map[string]map[string]bool{}}
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "tidegate_") {
			continue
		}
		m.labels[name] = map[string]bool{}
		m.values[name] = map[string]map[string]bool{}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				m.labels[name][l.GetName()] = true
				if m.values[name][l.GetName()] == nil {
					m.values[name][l.GetName()] = map[string]bool{}
				}
				m.values[name][l.GetName()][l.GetValue()] = true
			}
		}
	}
	for _, c := range collectors {
		descs, err := described(c)
		if err != nil {
			return nil, err
		}
		for name, labels := range descs {
			if m.labels[name] == nil {
				m.labels[name] = labels
			}
		}
	}
	if len(m.labels) == 0 {
		return nil, errors.New("no tidegate_ metric was gathered")
	}
	return m, nil
}

var (
	descNameRe   = regexp.MustCompile(`fqName: "([^"]+)"`)
	descLabelsRe = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
)

// described returns the metrics c describes, with their label names, read
// from each description's String (client_golang has no accessor for them).
func described(c prometheus.Collector) (map[string]map[string]bool, error) {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	out := map[string]map[string]bool{}
	var bad []string
	for d := range ch {
		name, labels := descNameRe.FindStringSubmatch(d.String()), descLabelsRe.FindStringSubmatch(d.String())
		if name == nil || labels == nil {
			bad = append(bad, d.String())
			continue
		}
		out[name[1]] = map[string]bool{}
		for _, l := range strings.Split(labels[1], ",") {
			if l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"); l != "" {
				out[name[1]][l] = true
			}
		}
	}
	if bad != nil {
		return nil, fmt.Errorf("%T: descriptions not in the form %s and %s: %q", c, descNameRe, descLabelsRe, bad)
	}
	return out, nil
}

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = map[string]bool{"job": true, "instance": true}

var (
	metricRe   = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:])(tidegate_[a-zA-Z0-9_]+)`)
	selectorRe = regexp.MustCompile(`(tidegate_[a-zA-Z0-9_]+)\s*\{([^}]*)\}`)
	matcherRe  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)
	groupingRe = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	absentRe   = regexp.MustCompile(`\babsent\s*\(\s*[a-zA-Z_:][a-zA-Z0-9_:]*\s*\{([^}]*)\}`)
)

// checkExpr checks a PromQL expression against m: every tidegate_ metric it
// names is exported, every label it selects or groups by is one of the
// metric's (or a target label), and every = or =~ matcher on a label that
// the scrape showed values for matches one of them ($-variables are not
// checked). It returns the labels the result has, as far as a reading of
// the text tells (the "by" lists if any, the metrics' labels otherwise), for
// checking templates, and the problems found.
func (m *metricSet) checkExpr(expr string) (map[string]bool, []string) {
	var problems []string
	used := map[string]bool{}
	for _, sm := range metricRe.FindAllStringSubmatch(expr, -1) {
		name := sm[1]
		used[name] = true
		if m.labels[name] == nil {
			problems = append(problems, fmt.Sprintf("%s is not a metric tidegate exports (known: %s)", name, strings.Join(m.names(), ", ")))
		}
	}
	for _, sm := range selectorRe.FindAllStringSubmatch(expr, -1) {
		name := sm[1]
		if m.labels[name] == nil {
			continue
		}
		for _, mm := range matcherRe.FindAllStringSubmatch(sm[2], -1) {
			label, op, value := mm[1], mm[2], mm[3]
			if targetLabels[label] {
				continue
			}
			if !m.labels[name][label] {
				problems = append(problems, fmt.Sprintf("%s has no label %q (it has %s)", name, label, keys(m.labels[name])))
				continue
			}
			seen := m.values[name][label]
			if seen == nil || strings.Contains(value, "$") || (op != "=" && op != "=~") {
				continue
			}
			re, err := regexp.Compile("^(?:" + value + ")$")
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s{%s%s%q}: %v", name, label, op, value, err))
				continue
			}
			if !slices.ContainsFunc(keys(seen), func(v string) bool { return (op == "=" && v == value) || (op == "=~" && re.MatchString(v)) }) {
				problems = append(problems, fmt.Sprintf("%s{%s%s%q} matches none of the values exported: %s", name, label, op, value, keys(seen)))
			}
		}
	}
	all := map[string]bool{}
	for name := range used {
		for l := range m.labels[name] {
			all[l] = true
		}
	}
	result := map[string]bool{}
	grouped := false
	for _, sm := range groupingRe.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(sm[2], ",") {
			l = strings.TrimSpace(l)
			if l == "" {
				continue
			}
			if len(used) > 0 && !targetLabels[l] && !all[l] {
				problems = append(problems, fmt.Sprintf("%s (%s): no metric of the expression has label %q (they have %s)", sm[1], sm[2], l, keys(all)))
			}
			if sm[1] == "by" {
				grouped = true
				result[l] = true
			}
		}
	}
	switch {
	case absentRe.MatchString(expr):
		result = map[string]bool{}
		for _, mm := range matcherRe.FindAllStringSubmatch(absentRe.FindStringSubmatch(expr)[1], -1) {
			if mm[2] == "=" {
				result[mm[1]] = true
			}
		}
	case !grouped:
		for l := range all {
			result[l] = true
		}
		for l := range targetLabels {
			result[l] = true
		}
	}
	return result, problems
}

// names lists the metrics of m, sorted.
func (m *metricSet) names() []string {
	out := make([]string, 0, len(m.labels))
	for name := range m.labels {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// keys returns the keys of a set, sorted.
func keys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestExportedMetricsIncludeTheDocumentedOnes: the scrape is real. Each
// collector's metrics are there, and the conditional ones the rules and
// the dashboard use are known (accept errors from their description, the
// check latency from a passed check).
func TestExportedMetricsIncludeTheDocumentedOnes(t *testing.T) {
	m := exportedMetrics(t)
	for _, name := range []string{
		"tidegate_engine_up", "tidegate_listener_up", "tidegate_accept_paused", "tidegate_accept_errors_total",
		"tidegate_fd_limit", "tidegate_fd_accounted", "tidegate_proxy_backend_up", "tidegate_proxy_backend_check_latency_seconds",
		"tidegate_proxy_sessions_active", "tidegate_tlv_requests_total",
	} {
		if m.labels[name] == nil {
			t.Errorf("%s is not exported (have %s)", name, strings.Join(m.names(), ", "))
		}
	}
	if got := m.values["tidegate_engine_up"]["server"]; !got["proxy"] || !got["tlv"] || !got["publish"] || !got["subscribe"] {
		t.Errorf("tidegate_engine_up servers %v, want proxy, tlv, publish and subscribe", keys(got))
	}
	if !m.labels["tidegate_accept_errors_total"]["errno"] {
		t.Errorf("tidegate_accept_errors_total labels %v, want errno", keys(m.labels["tidegate_accept_errors_total"]))
	}
}

// TestCheckExprFindsMistakes: the checker itself catches an unknown metric,
// an unknown label, a label value never exported and a grouping label no
// metric has.
func TestCheckExprFindsMistakes(t *testing.T) {
	m := exportedMetrics(t)
	for expr, want := range map[string]string{
		`tidegate_proxy_sessions_open > 0`:                                                 "tidegate_proxy_sessions_open is not a metric",
		`tidegate_proxy_backend_up{backend="x"} == 0`:                                      `has no label "backend"`,
		`tidegate_accept_paused{reason="paused_max_sessions"} == 1`:                        "matches none of the values exported",
		`max by (cluster) (tidegate_proxy_backend_up) == 0`:                                `no metric of the expression has label "cluster"`,
		`sum by (reason) (rate(tidegate_proxy_rejected_total{reason=~"bad_.*|nope"}[5m]))`: "",
	} {
		_, problems := m.checkExpr(expr)
		joined := strings.Join(problems, "; ")
		if (want == "") != (joined == "") || !strings.Contains(joined, want) {
			t.Errorf("checkExpr(%s) = %q, want a problem containing %q", expr, joined, want)
		}
	}
}

// runbookDoc is the file the alerts' runbooks are in, from the repository's
// root, and runbookURL the address runbook_url links it at.
const (
	runbookDoc = "docs/operations.md"
	runbookURL = "https://github.com/tidegate/tidegate/blob/main/" + runbookDoc
)

// runbookAnchors returns the anchors of runbookDoc's headings, as GitHub
// makes them: lower case, spaces to hyphens, punctuation dropped.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("../" + runbookDoc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}
