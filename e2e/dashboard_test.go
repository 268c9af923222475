package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// dashboardOptional are metrics the dashboard shows that a gateway exports
// only once the event they count has happened (a labelled counter with no
// child yet): a healthy test stack never sees them.
var dashboardOptional = map[string]string{
	"civicgate_redis_errors_total":                          "labelled by component and cause: the first Redis error",
	"civicgate_graphql_guard_measure_only_violations_total": "labelled by limit: the first over-limit document under measure_only",
	"civicgate_graphql_cache_shared_total":                  "labelled by result: the first shared-tier operation (the test runs the cache off)",
	"civicgate_webhooks_deliveries_total":                   "labelled by outcome: the first finished delivery",
	"civicgate_webhooks_attempts_total":                     "labelled by result: the first delivery attempt",
}

// dashboardMetric is a metric name in a PromQL expression: the families this
// project and Caddy export.
var dashboardMetric = regexp.MustCompile(`\b(?:civicgate|caddy|go|process|promhttp)_[a-zA-Z0-9_]+`)

// dashboardPanel is the part of a Grafana panel the check reads; rows nest
// panels.
type dashboardPanel struct {
	Title      string           `json:"title"`
	Type       string           `json:"type"`
	Datasource *json.RawMessage `json:"datasource"`
	Targets    []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

type dashboard struct {
	Title         string           `json:"title"`
	UID           string           `json:"uid"`
	SchemaVersion int              `json:"schemaVersion"`
	Panels        []dashboardPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Query      any    `json:"query"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// loadDashboard parses deploy/grafana/civicgate.json and returns it with
// every PromQL expression of its panels, by panel title.
func loadDashboard(t *testing.T, root string) (dashboard, map[string][]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "civicgate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("deploy/grafana/civicgate.json: %v", err)
	}
	exprs := map[string][]string{}
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				exprs[p.Title] = append(exprs[p.Title], tg.Expr)
			}
			if p.Type != "row" && (p.Datasource == nil || !strings.Contains(string(*p.Datasource), "${datasource}")) {
				t.Errorf("panel %q does not use the ${datasource} variable", p.Title)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			exprs["variable "+v.Name] = append(exprs["variable "+v.Name], v.Definition)
		}
	}
	return d, exprs
}

// exportedMetrics scrapes the gateway's admin /metrics and returns the
// metric names it exports.
func exportedMetrics(t *testing.T, s *stack.Stack) map[string]bool {
	t.Helper()
	resp, err := http.Get("http://" + s.Getenv("CIVICGATE_ADMIN") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// checkDashboard: the shipped Grafana dashboard is well formed (a Prometheus
// datasource variable every panel uses, a uid, schemaVersion ≥ 39), and every
// metric its expressions name is one the running gateway exports (a
// histogram's _bucket, _sum and _count by its base name), or one listed in
// dashboardOptional — so the dashboard cannot drift from the code.
func checkDashboard(t *testing.T, s *stack.Stack) {
	t.Helper()
	d, exprs := loadDashboard(t, s.Root)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 39 {
		t.Errorf("dashboard uid %q title %q schemaVersion %d", d.UID, d.Title, d.SchemaVersion)
	}
	hasDS := false
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus" {
			hasDS = true
		}
	}
	if !hasDS {
		t.Error("no datasource variable of type prometheus")
	}
	exported := exportedMetrics(t, s)
	used := 0
	for title, list := range exprs {
		for _, e := range list {
			for _, m := range dashboardMetric.FindAllString(e, -1) {
				used++
				base := m
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(m, suf); ok && exported[b+"_bucket"] {
						base = b + "_bucket"
					}
				}
				if !exported[base] && dashboardOptional[m] == "" {
					t.Errorf("panel %q uses %s, which the gateway does not export", title, m)
				}
			}
		}
	}
	if used < 20 {
		t.Errorf("only %d metric references in the dashboard", used)
	}
	if t.Failed() {
		var names []string
		for n := range exported {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Logf("exported: %s", strings.Join(names, " "))
	}
}
