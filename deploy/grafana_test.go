package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const dashboardPath = "grafana/tidegate-dashboard.json"

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// panel is a dashboard panel; rows hold no queries.
type panel struct {
	ID         int                       `json:"id"`
	Type       string                    `json:"type"`
	Title      string                    `json:"title"`
	Datasource *datasourceRef            `json:"datasource"`
	GridPos    *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets    []struct {
		RefID        string         `json:"refId"`
		Expr         string         `json:"expr"`
		LegendFormat string         `json:"legendFormat"`
		Datasource   *datasourceRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

// datasourceRef names a panel's or a query's data source.
type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// legendRe finds the labels a legend format uses.
var legendRe = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)

// grafanaVars replaces the dashboard's variables with what they stand for
// in a query, for promtool to parse.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$job", ".*", "$instance", ".*")

// dashboardQueries reads the dashboard and returns its panels, rows left
// out (those of collapsed rows included).
func dashboardQueries(t *testing.T) (dashboard, []panel) {
	t.Helper()
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			out = append(out, p)
		}
	}
	walk(d.Panels)
	return d, out
}

// TestDashboard: the dashboard parses; it has a uid, a title, a schema
// version Grafana 10 and 11 read, and a Prometheus data source variable;
// each panel has a title, a data source, a place on the grid and queries,
// with unique ids; every metric and label a query uses is exported, and
// every legend uses a label its query's result has; and the panels the
// operators' guide names are there.
func TestDashboard(t *testing.T) {
	d, panels := dashboardQueries(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: want both", d.UID, d.Title)
	}
	if d.SchemaVersion < 36 || d.SchemaVersion > 41 {
		t.Errorf("schemaVersion %d: want about 39", d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" || vars["job"] != "query" || vars["instance"] != "query" {
		t.Errorf("template variables %v: want datasource (datasource), job and instance (query)", vars)
	}
	m := exportedMetrics(t)
	ids := map[int]string{}
	titles := map[string]bool{}
	for _, p := range panels {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.Title == "" {
			t.Errorf("%s: no title", where)
		}
		titles[p.Title] = true
		if prev, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("%s: id %d missing or also %q's", where, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("%s: datasource %+v: want the prometheus ${datasource}", where, p.Datasource)
		}
		if p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("%s: gridPos %+v: want a width and height within the 24 columns", where, p.GridPos)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no targets", where)
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" || q.RefID == "" {
				t.Errorf("%s: target %q has no expr", where, q.RefID)
				continue
			}
			if q.Datasource != nil && *q.Datasource != *p.Datasource {
				t.Errorf("%s: target %s data source %+v differs from the panel's", where, q.RefID, q.Datasource)
			}
			if !strings.Contains(q.Expr, "tidegate_") {
				t.Errorf("%s: target %s %q uses no tidegate metric", where, q.RefID, q.Expr)
			}
			result, problems := m.checkExpr(q.Expr)
			for _, pr := range problems {
				t.Errorf("%s: target %s %s: %s", where, q.RefID, q.Expr, pr)
			}
			for _, sm := range legendRe.FindAllStringSubmatch(q.LegendFormat, -1) {
				if !result[sm[1]] {
					t.Errorf("%s: target %s legend %q uses %s, which the result of %s does not have (it has %s)",
						where, q.RefID, q.LegendFormat, sm[1], q.Expr, keys(result))
				}
			}
		}
	}
	for _, title := range []string{"Sessions", "Accepted connections vs descriptor limit", "Accept errors by errno",
		"Backend up", "Backend check latency", "Bytes by direction", "Frames by direction", "Rejected and ended by reason",
		"Paused connections", "Linger expired", "Accept paused"} {
		if !titles[title] {
			t.Errorf("no panel %q", title)
		}
	}
}

// TestDashboardQueriesWithPromtool: promtool parses every query (as a
// recording rule, with the dashboard's variables filled in), where it is
// installed.
func TestDashboardQueriesWithPromtool(t *testing.T) {
	promtool := lookPath(t, "promtool")
	_, panels := dashboardQueries(t)
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for _, p := range panels {
		for _, q := range p.Targets {
			expr, _ := json.Marshal(grafanaVars.Replace(q.Expr)) // a JSON string is a YAML string
			fmt.Fprintf(&b, "      - record: dashboard:panel%d:%s\n        expr: %s\n", p.ID, q.RefID, expr)
		}
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "", promtool, "check", "rules", path)
}
