package deploy

import (
	"bytes"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// ruleFile is a Prometheus rule file, with every key a rule may have, so
// that a misspelt one is an error.
type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []struct {
			Alert         string            `yaml:"alert"`
			Record        string            `yaml:"record"`
			Expr          string            `yaml:"expr"`
			For           string            `yaml:"for"`
			KeepFiringFor string            `yaml:"keep_firing_for"`
			Labels        map[string]string `yaml:"labels"`
			Annotations   map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

const rulesPath = "prometheus/tidegate-alerts.yml"

// labelRefRe finds the labels an annotation template uses.
var labelRefRe = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)

// TestAlertRules: every rule is an alert with an expression, a for, a
// severity, a summary, a description and a runbook URL that points at a
// heading of docs/operations.md; every metric and label it uses is exported; the
// annotations use only labels the expression's result has; and the alerts
// the operators' guide describes are all there.
func TestAlertRules(t *testing.T) {
	data, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("%s: %v", rulesPath, err)
	}
	m := exportedMetrics(t)
	anchors := runbookAnchors(t)
	seen := map[string]string{}
	for _, g := range rf.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: want a name and rules", g.Name)
		}
		for i, r := range g.Rules {
			where := g.Name + "/" + r.Alert
			if r.Alert == "" || r.Record != "" {
				t.Errorf("%s rule %d: want an alert (and no record), got alert %q record %q", g.Name, i, r.Alert, r.Record)
				continue
			}
			if !strings.HasPrefix(r.Alert, "Tidegate") {
				t.Errorf("%s: alert names start with Tidegate", where)
			}
			if prev, dup := seen[r.Alert]; dup {
				t.Errorf("%s: alert name also used in %s", where, prev)
			}
			seen[r.Alert] = r.Expr
			if strings.TrimSpace(r.Expr) == "" {
				t.Errorf("%s: no expr", where)
			}
			if d, err := time.ParseDuration(r.For); err != nil || d <= 0 {
				t.Errorf("%s: for %q: want a positive duration (%v)", where, r.For, err)
			}
			switch r.Labels["severity"] {
			case "critical", "warning", "info":
			default:
				t.Errorf("%s: labels.severity %q: want critical, warning or info", where, r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no annotations.%s", where, a)
				}
			}
			if u, err := url.Parse(r.Annotations["runbook_url"]); err != nil || !strings.HasPrefix(r.Annotations["runbook_url"], runbookURL+"#") || !anchors[u.Fragment] {
				t.Errorf("%s: runbook_url %q: want a link to a heading of %s, %s#... (%v)", where, r.Annotations["runbook_url"], runbookDoc, runbookURL, err)
			}
			result, problems := m.checkExpr(r.Expr)
			for _, p := range problems {
				t.Errorf("%s: expr %s: %s", where, r.Expr, p)
			}
			for a, text := range r.Annotations {
				for _, sm := range labelRefRe.FindAllStringSubmatch(text, -1) {
					if !result[sm[1]] {
						t.Errorf("%s: annotations.%s uses $labels.%s, which the result of %s does not have (it has %s)",
							where, a, sm[1], r.Expr, keys(result))
					}
				}
			}
		}
	}
	// The alerts docs/operations.md explains, by what they watch.
	for alert, metric := range map[string]string{
		"TidegateEngineDown":                "tidegate_engine_up",
		"TidegateListenerDown":              "tidegate_listener_up",
		"TidegateNoHealthyBackend":          "tidegate_proxy_backend_up",
		"TidegateBackendDown":               "tidegate_proxy_backend_up",
		"TidegateDescriptorBudgetNearLimit": "tidegate_fd_limit",
		"TidegateAcceptErrors":              "tidegate_accept_errors_total",
		"TidegateAcceptPaused":              "tidegate_accept_paused",
		"TidegateTargetDown":                `up{job="tidegate"}`,
		"TidegateMetricsAbsent":             "absent(tidegate_engine_up",
	} {
		if expr, ok := seen[alert]; !ok {
			t.Errorf("no alert %s", alert)
		} else if !strings.Contains(expr, metric) {
			t.Errorf("alert %s: expr %q does not use %s", alert, expr, metric)
		}
	}
}

// TestAlertRulesWithPromtool: promtool's own check of the rules, and its
// unit tests of when each alert fires (prometheus/tidegate-alerts.test.yml),
// where promtool is installed (Debian's prometheus package has it).
func TestAlertRulesWithPromtool(t *testing.T) {
	promtool := lookPath(t, "promtool")
	run(t, "", promtool, "check", "rules", rulesPath)
	run(t, "prometheus", promtool, "test", "rules", "tidegate-alerts.test.yml")
}

// lookPath returns the path of a tool, or skips the test without it.
func lookPath(t *testing.T, tool string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		t.Skipf("%s is not installed: %v", tool, err)
	}
	return path
}

// run runs a command in dir (the package's directory when "") and fails
// the test with its output if it fails.
func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
